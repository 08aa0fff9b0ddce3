#!/usr/bin/env python3
"""Regenerates the expectations of the golden tests in tests/lit/golden.

Each golden test's first RUN line is `COMMAND | FileCheck %s --strict-whitespace
--match-full-lines`; this runs COMMAND and rewrites every CHECK line of the file
to the output, line for line. Review the diff before committing it.

Usage: tests/lit/update_golden.py BUILD_DIR/ksmith [TEST ...]
"""
import pathlib
import re
import shlex
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = HERE.parent.parent / "examples"


def escape(line: str) -> str:
    """FileCheck reads [[...]] as a variable and {{...}} as a regex: match them literally."""
    return re.sub(r"\[\[|\{\{", lambda m: "{{\\" + m.group(0)[0] + "\\" + m.group(0)[1] + "}}", line)


def regenerate(test: pathlib.Path, ksmith: str) -> None:
    lines = test.read_text().splitlines()
    run = next(l for l in lines if l.startswith("# RUN:"))
    command = run[len("# RUN:"):].split("| FileCheck")[0].strip()
    for name, value in (("%ksmith", ksmith), ("%examples", str(EXAMPLES)), ("%inputs", str(HERE / "inputs"))):
        command = command.replace(name, shlex.quote(value))
    output = subprocess.run(command, shell=True, check=True, capture_output=True, text=True).stdout
    kept = [l for l in lines if not l.startswith("# CHECK")]
    checks = []
    for i, line in enumerate(output.splitlines()):
        if not line:
            checks.append("# CHECK-EMPTY:")
        else:
            checks.append(("# CHECK:" if i == 0 else "# CHECK-NEXT:") + escape(line))
    test.write_text("\n".join(kept + checks) + "\n")
    print(f"updated {test.relative_to(HERE)} ({len(checks)} lines)")


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tests = [pathlib.Path(t).resolve() for t in sys.argv[2:]] or sorted((HERE / "golden").glob("*.test"))
    for test in tests:
        regenerate(test, sys.argv[1])


if __name__ == "__main__":
    main()
