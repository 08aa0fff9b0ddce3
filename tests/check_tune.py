#!/usr/bin/env python3
"""Every device of a host, and `ksmith tune`, as a user runs them, on two PoCL devices
(POCL_DEVICES="pthread pthread"):

1. `ksmith evolve --devices all`: evaluations on both devices, each record naming its
   device, and every speedup against the naive kernel timed on the same device (one
   worker a device: each device's records share one baseline, measured there);
2. the user's errors: a device named twice, devices of two APIs, a suite without
   specs, sizes for a problem that is not in the suite, an earlier tuning without
   --resume, --resume with nothing to resume;
3. `ksmith tune` of three problems over the two devices, killed with -9 (its whole
   process group) once the first problem is done, then --resume: the tuned folder has
   every NAME.sched and NAME.json, the problem done before the kill is not searched
   again, each database holds its evaluations once, and `ksmith bench --tuned` reads
   the folder.

SKIPs (exit 77) without an OpenCL device or where PoCL is not the OpenCL platform.
Usage: check_tune.py KSMITH SOURCE_DIR
"""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from check_common import ksmith_and_source

ksmith, source = ksmith_and_source()
env = dict(os.environ, POCL_DEVICES="pthread pthread")
devices = json.loads(subprocess.run([ksmith, "devices", "--json"], capture_output=True, text=True, env=env,
                                    check=True).stdout)
pocl = [d for d in devices if d["api"] == "opencl" and "Portable" in d.get("platform", "")]
if len(pocl) < 2:
    print("SKIP: POCL_DEVICES=\"pthread pthread\" gives no two PoCL devices here")
    sys.exit(77)
work = tempfile.mkdtemp(prefix="check_tune-")


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def ks(*args, **kw):
    return subprocess.run([ksmith, *args], capture_output=True, text=True, env=env, **kw)


def records(db):
    with sqlite3.connect(db) as c:
        return [json.loads(r) for (r,) in c.execute("SELECT record FROM candidates WHERE record != ''")]


# 1. One search on both devices.
out = os.path.join(work, "evolve")
r = ks("evolve", os.path.join(source, "examples/softmax.ks"), "--devices", "all", "--workers", "1", "--budget", "10",
       "--size", "N=64,D=1024", "--out", out)
if r.returncode != 0:
    fail(f"evolve --devices all exited {r.returncode}: {r.stderr}")
baselines = {}
for rec in records(os.path.join(out, "evolve.db")):
    if "time" not in rec or "baseline_ms" not in rec["time"]:
        continue
    baselines.setdefault(rec["device"]["selector"], set()).add(rec["time"]["baseline_ms"])
if sorted(baselines) != ["opencl:0", "opencl:1"]:
    fail(f"evaluations on {sorted(baselines)}, expected both PoCL devices")
for device, values in baselines.items():
    if len(values) != 1:
        fail(f"{device}'s records have {len(values)} baselines ({values}): one worker times the naive kernel once")
print(f"ok: one search on both devices, one baseline each: {baselines}")

# 2. The user's errors.
suite = os.path.join(work, "suite")
os.makedirs(suite)
for name in ("softmax", "gelu", "matvec"):
    shutil.copy(os.path.join(source, "examples", name + ".ks"), suite)
sizes = os.path.join(work, "sizes.txt")
with open(sizes, "w") as f:
    f.write("softmax N=64,D=1024\ngelu N=256,D=1024\nmatvec M=64,K=4096\n")
empty = os.path.join(work, "empty")
os.makedirs(empty)
bad_sizes = os.path.join(work, "bad_sizes.txt")
with open(bad_sizes, "w") as f:
    f.write("softmax N=64,D=1024\nlayer_norm N=64,D=1024\n")
tuned = os.path.join(work, "tuned")
for args, want in [
    (["evolve", os.path.join(source, "examples/softmax.ks"), "--devices", "opencl:0,opencl:0"], "named twice"),
    (["evolve", os.path.join(source, "examples/softmax.ks"), "--devices", "opencl:0,vulkan:0"], "of one API"),
    (["tune", empty, "--out", tuned], "holds no .ks specs"),
    (["tune", suite, "--sizes", bad_sizes, "--out", tuned], "layer_norm, which is not a spec of"),
    (["tune", suite, "--sizes", sizes, "--out", tuned, "--resume"], "nothing to resume"),
]:
    r = ks(*args)
    if r.returncode != 1 or want not in r.stderr:
        fail(f"ksmith {' '.join(args)}: exit {r.returncode}, {r.stderr.strip()!r}; wanted 1 and {want!r}")
if os.path.exists(os.path.join(tuned, "runs")):
    fail("a refused tuning left a folder behind")
print("ok: the user's errors")

# 3. A tuning killed with -9 after its first problem, then resumed.
common = ["tune", suite, "--sizes", sizes, "--out", tuned, "--devices", "all", "--workers", "1",
          "--budget-per-problem", "8", "--minutes-per-problem", "1"]
child = subprocess.Popen([ksmith, *common], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                         start_new_session=True)
deadline = time.time() + 300
first = None
while time.time() < deadline and first is None:
    done = [n for n in ("softmax", "gelu", "matvec") if os.path.exists(os.path.join(tuned, n + ".json"))]
    first = done[0] if done else None
    time.sleep(0.2)
if first is None:
    os.killpg(child.pid, signal.SIGKILL)
    fail("no problem was tuned within 300 s")
os.killpg(child.pid, signal.SIGKILL)  # the tuning and its searches; their workers end with their input
child.wait()
with open(os.path.join(tuned, first + ".json")) as f:
    before = f.read()
r = ks(*common, "--resume", timeout=600)
if r.returncode != 0:
    fail(f"the resumed tuning exited {r.returncode}: {r.stdout}{r.stderr}")
if f"{first} on" in r.stdout:
    fail(f"{first}, tuned before the kill, was searched again:\n{r.stdout}")
with open(os.path.join(tuned, first + ".json")) as f:
    if f.read() != before:
        fail(f"{first}.json changed in the resume")
on = set()
for name in ("softmax", "gelu", "matvec"):
    summary = json.load(open(os.path.join(tuned, name + ".json")))
    if summary.get("status") != "finished":
        fail(f"{name}.json: status {summary.get('status')}")
    on.add(summary["tuned_on"])
    if not os.path.exists(os.path.join(tuned, name + ".sched")) and summary.get("best", {}).get("speedup", 1) > 1:
        fail(f"{name}: a best over the naive kernel but no {name}.sched")
    with sqlite3.connect(os.path.join(tuned, "runs", name, "evolve.db")) as c:
        seqs = [s for (s,) in c.execute("SELECT eval_seq FROM candidates WHERE eval_seq > 0")]
        if sorted(seqs) != list(range(1, len(seqs) + 1)) or len(seqs) > 8:
            fail(f"{name}: evaluations {sorted(seqs)}: each once, at most the budget of 8")
        if c.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            fail(f"{name}: the database fails its integrity check")
if not on & {"opencl:0", "opencl:1"}:
    fail(f"the problems were tuned on {on}")
r = ks("bench", suite, "--sizes", sizes, "--tuned", tuned, "--json", timeout=600)
if r.returncode not in (0, 1) or len(json.loads(r.stdout)["problems"]) != 3:
    fail(f"ksmith bench --tuned: exit {r.returncode}: {r.stderr}")
print(f"ok: killed after {first}, resumed: three problems tuned on {sorted(on)}")
shutil.rmtree(work, ignore_errors=True)
