"""The schedule fuzzer's smoke run (ctest fuzz_schedules): `ksmith fuzz` on every
example and on random specs, a fixed seed and a fixed number of schedules, on the
first OpenCL and the first Vulkan device; it must find nothing, and its summary must
count every pair it checked. A finding fails the test with what the fuzzer wrote of it
(its minimised spec, schedule, sizes and the command that replays it).
    python3 tests/check_fuzz.py KSMITH SOURCE_DIR [SCHEDULES]"""
import json
import os
import subprocess
import sys
import tempfile

from check_common import ksmith_and_source


def main():
    ksmith, source = ksmith_and_source()
    schedules = sys.argv[3] if len(sys.argv) > 3 else "16"
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([ksmith, "fuzz", os.path.join(source, "examples"), "--random-specs", "1000", "--seed",
                              "1", "--schedules", schedules, "--out", out], capture_output=True, text=True)
        print(run.stdout, end="")
        summary = json.load(open(os.path.join(out, "summary.json")))
        for folder in summary["findings"]:
            for name in ("what.txt", "spec.ks", "schedule.sched", "sizes", "repro.sh"):
                print(f"--- {os.path.basename(folder)}/{name}\n" + open(os.path.join(folder, name)).read())
        assert run.returncode == (1 if summary["findings"] else 0), run.stderr
        assert not summary["findings"], f"{len(summary['findings'])} findings"
        assert summary["schedules"] == int(schedules), summary
        assert summary["pairs"] == sum(summary["outcomes"].values()), summary
        assert summary["outcomes"].get("passed", 0) >= summary["pairs"] // 2, summary["outcomes"]
        print(f"fuzz smoke: {summary['pairs']} pairs, {summary['outcomes']}")


if __name__ == "__main__":
    main()
