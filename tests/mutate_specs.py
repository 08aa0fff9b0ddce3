#!/usr/bin/env python3
"""Property test: no spec and no schedule crashes the compiler.

Mutates the example specs and their hand-written schedules at random (deleting,
duplicating, swapping and replacing tokens, changing numbers) and compiles each
mutant to OpenCL C: half the runs mutate a spec, half a schedule (applied to its
unmutated spec). Every run must end with exit status 0, or 1 with a clean `error:`
message; a signal, a timeout, any other status or an "internal error" fails the test,
printing the mutant so it can be replayed. Deterministic for a given seed.

Usage: mutate_specs.py KSMITH EXAMPLES_DIR [COUNT] [SEED]
"""
import pathlib
import random
import re
import subprocess
import sys
import tempfile

PIECES = ["(", ")", "[", "]", "{", "}", ",", ":", "=", "->", "..", "+", "-", "*", "/", "%", "<", ">=", "&&",
          "else", "sum", "max", "argmax", "where", "check", "in", "0", "1", "-1", "2.5", "1e30", "999999999999",
          "inf", "x", "y", "N", "f32", "i64", "select", "exp", "#", "\n", " ",
          "split", "tile", "bind", "fuse", "reorder", "unroll", "inline", "cross_reduce", "group.x", "local.y",
          "t", "n", "d", "4096", "1024"]


def mutate(text: str, rng: random.Random) -> str:
    tokens = re.findall(r"\w+|\.\.|->|&&|\|\||[<>=!]=|\S|\s+", text)
    for _ in range(rng.randint(1, 4)):
        if not tokens:
            break
        i = rng.randrange(len(tokens))
        kind = rng.randrange(5)
        if kind == 0:
            del tokens[i]
        elif kind == 1:
            tokens.insert(i, rng.choice(PIECES))
        elif kind == 2:
            j = rng.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == 3 and tokens[i].isdigit():
            tokens[i] = str(rng.choice([0, 1, 2, 3, 7, 64, 1000, 2 ** 31, 2 ** 40]))
        else:
            tokens.insert(i, tokens[rng.randrange(len(tokens))])
    return "".join(tokens)


def main() -> None:
    ksmith, examples = sys.argv[1], pathlib.Path(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    specs = sorted(examples.glob("*.ks"))
    schedules = sorted(examples.glob("*.sched"))
    outcomes = {0: 0, 1: 0}
    with tempfile.TemporaryDirectory() as tmp:
        out = str(pathlib.Path(tmp) / "out.cl")
        for n in range(count):
            if n % 2 and schedules:
                schedule = schedules[(n // 2) % len(schedules)]
                mutant = mutate(schedule.read_text(), rng)
                path = pathlib.Path(tmp) / "mutant.sched"
                command = [ksmith, "compile", str(schedule.with_suffix(".ks")), "--schedule", str(path), "-o", out]
            else:
                mutant = mutate(specs[n % len(specs)].read_text(), rng)
                path = pathlib.Path(tmp) / "mutant.ks"
                command = [ksmith, "compile", str(path), "-o", out]
            path.write_text(mutant)
            try:
                run = subprocess.run(command, capture_output=True, text=True, timeout=20)
            except subprocess.TimeoutExpired:
                sys.exit(f"mutant {n} timed out:\n{mutant}")
            bad = run.returncode not in (0, 1) or "internal error" in run.stderr or \
                (run.returncode == 1 and "error:" not in run.stderr)
            if bad:
                sys.exit(f"mutant {n} ended with status {run.returncode}:\n{run.stderr}\n--- mutant ---\n{mutant}")
            outcomes[run.returncode] += 1
    print(f"{count} mutants of specs and schedules: {outcomes[0]} compiled, {outcomes[1]} refused with an error, "
          "none crashed")


if __name__ == "__main__":
    main()
