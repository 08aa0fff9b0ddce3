#!/usr/bin/env python3
"""`ksmith bench` on the CI-size suite: every example at its check sizes (its `check` line
over its `where` line) on the default OpenCL device, with PyTorch run first by
bench/torch_peer.py. The check sizes, not bench/sizes_cpu.txt's: the test asserts what
the suite records, not how fast, and at the check sizes the timed programs are those the
check compiles (the device tests' as well), so a cold PoCL compiles 35 examples' programs
once rather than twice (151 s of the test suite's time, cold, at bench/sizes_cpu.txt's).

Every problem must be correct, timed, and carry its record (verdict, features, the
timing method); the metrics must cover every problem; every problem must have a
PyTorch time (Debian's python3-torch, which scripts/setup.sh installs) and the metrics
their speedups: a peer that cannot run fails `ksmith bench` and so this test. Prints
each problem's time beside PyTorch's. SKIPs (exit 77) when there is no OpenCL device.

Usage: check_bench.py KSMITH SOURCE_DIR
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from check_common import ksmith_and_source

ksmith, source = ksmith_and_source()
source = pathlib.Path(source)
# Debian's interpreter is the one python3-torch installs into.
python = os.environ.get("PYTHON") or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)


def sizes_line(spec):
    """NAME SIZES: the spec's where-line sizes, its check line's over them."""
    sizes = {}
    for line in spec.read_text().splitlines():
        words = line.split("#")[0].split(None, 1)
        if len(words) == 2 and words[0] in ("where", "check"):
            for assignment in words[1].split(","):
                name, value = assignment.split("=")
                if words[0] == "check" or name.strip() not in sizes:
                    sizes[name.strip()] = value.strip()
    return spec.stem + " " + ",".join(f"{k}={v}" for k, v in sizes.items())


with tempfile.TemporaryDirectory() as scratch:
    sizes_file = pathlib.Path(scratch) / "sizes_check.txt"
    sizes_file.write_text("".join(sizes_line(p) + "\n" for p in sorted((source / "examples").glob("*.ks"))))
    command = [ksmith, "bench", str(source / "examples"), "--sizes", str(sizes_file), "--target", "opencl", "--peer",
               str(source / "bench/torch_peer.py"), "--python", python, "--time-limit", "300"]
    run = subprocess.run(command + ["--json"], capture_output=True, text=True, timeout=1800)
sys.stderr.write(run.stderr)
assert run.returncode == 0, f"ksmith bench exited with {run.returncode}"
suite = json.loads(run.stdout)

specs = sorted(p.stem for p in (source / "examples").glob("*.ks"))
problems = {p["problem"]: p for p in suite["problems"]}
failures = []
assert sorted(problems) == specs, f"problems {sorted(problems)} are not the examples {specs}"
for name, p in problems.items():
    record = p["record"] or {}
    if not p["correct"]:
        failures.append(f"{name}: {p['failure']}")
        continue
    assert record["verdict"] == "correct", name
    assert record["time"]["median_ms"] > 0, name
    assert record["time"]["method"].startswith("opencl "), name
    assert record["features"]["kind"] in ("naive", "schedule"), name
    if (source / "examples" / f"{name}.sched").exists():
        assert record["features"]["kind"] == "schedule", f"{name}: its schedule was not applied"
assert not failures, "problems failed:\n  " + "\n  ".join(failures)
metrics = suite["metrics"]["all"]
assert metrics["problems"] == len(specs) and metrics["correct"] == len(specs), metrics

missing = [name for name, p in problems.items() if "peer_ms" not in p]
assert not missing, f"no PyTorch time for {missing}; warnings: {suite['warnings']}"
assert not suite["warnings"], suite["warnings"]
assert metrics["with_peer"] == len(specs), metrics
assert metrics["geomean_speedup"] > 0 and 0 <= metrics["fast_1.0"] <= 1, metrics

for name, p in sorted(problems.items()):
    ms, peer = p["record"]["time"]["median_ms"], p.get("peer_ms")
    print(f"{name:22} {ms:10.4f} ms" + (f"  PyTorch {peer:10.4f} ms  {peer / ms:6.2f}x" if peer else ""))
print(f"all: {metrics}")

# The memory-bound examples at bf16 (--dtype): each spec's f32 tensors bf16 in every record,
# PyTorch at bf16 beside them; a peer file measured at another type is refused.
HALF_SUITE = ["gelu", "layer_norm", "softmax", "sum_dim"]
with tempfile.TemporaryDirectory() as scratch:
    folder = pathlib.Path(scratch) / "suite"
    folder.mkdir()
    for name in HALF_SUITE:
        for ext in (".ks", ".sched"):
            if (source / "examples" / (name + ext)).exists():
                (folder / (name + ext)).write_text((source / "examples" / (name + ext)).read_text())
    sizes_file = pathlib.Path(scratch) / "sizes_check.txt"
    sizes_file.write_text("".join(sizes_line(folder / (n + ".ks")) + "\n" for n in HALF_SUITE))
    command = [ksmith, "bench", str(folder), "--sizes", str(sizes_file), "--target", "opencl", "--dtype", "bf16",
               "--time-limit", "300"]
    run = subprocess.run(command + ["--peer", str(source / "bench/torch_peer.py"), "--python", python, "--json"],
                         capture_output=True, text=True, timeout=1800)
    sys.stderr.write(run.stderr)
    assert run.returncode == 0, f"ksmith bench --dtype bf16 exited with {run.returncode}"
    half = json.loads(run.stdout)
    assert half["dtype"] == "bf16" and " at bf16" in half["peer"], (half["dtype"], half["peer"])
    for p in half["problems"]:
        assert p["correct"], f"{p['problem']} at bf16: {p['failure']}"
        assert p["record"]["tensor_types"] == "bf16", (p["problem"], p["record"]["tensor_types"])
        assert "peer_ms" in p, f"{p['problem']} at bf16 has no PyTorch time: {half['warnings']}"
        print(f"{p['problem']:22} bf16 {p['record']['time']['median_ms']:10.4f} ms  PyTorch bf16 {p['peer_ms']:10.4f} ms")
    f32_peer = pathlib.Path(scratch) / "peer_f32.json"
    f32_peer.write_text(json.dumps({"torch": "2", "device": "cpu", "precision": "fp32", "problems": {}}))
    refused = subprocess.run(command + ["--peer", str(f32_peer)], capture_output=True, text=True, timeout=600)
    assert refused.returncode == 1 and "torch_peer.py --dtype" in refused.stderr, refused.stderr
print(f"PASS: {len(specs)} problems correct; peer: {suite['peer']}; {len(HALF_SUITE)} at bf16 beside PyTorch at bf16")
