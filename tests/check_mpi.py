#!/usr/bin/env python3
"""`mpirun ksmith tune` and `mpirun ksmith evolve` (evolve/farm/), as a user runs them on
one host with two PoCL devices (POCL_DEVICES="pthread pthread"), ranks oversubscribed:

1. `mpirun -np 3 ksmith tune` of three problems: rank 0 tunes on its device and on
   rank 1's, rank 2 has none and says it idles; killed with -9 (rank 1 alone) once
   rank 1 has evaluated: MPI ends the job naming rank 1; then the same command with
   --resume on 2 ranks: the tuned folder has every NAME.sched and NAME.json, no record
   written before the kill changed or went missing, each evaluation is in its database
   once, and records came from both ranks' devices;
2. a rank that hangs (SIGSTOP): the job ends after --rank-timeout with a message that
   names it, the databases pass their integrity check;
3. a rank that runs another build of ksmith: refused at the start, naming it, before
   any folder is made; a hostfile naming a host that cannot be reached: MPI's own error,
   nothing made;
4. `mpirun -np 2 ksmith evolve --devices all`: one search evaluating on both ranks, rank 1
   started in another folder, so that the relative paths rank 0 names are not there: it
   evaluates the files' texts it is sent, and its records name rank 0's paths.

SKIPs (exit 77) without an OpenCL device or two PoCL devices.
Usage: check_mpi.py KSMITH SOURCE_DIR MPIRUN
"""
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from check_common import ksmith_and_source

ksmith, source = ksmith_and_source()
mpirun = sys.argv[3]
env = dict(os.environ, POCL_DEVICES="pthread pthread", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
devices = json.loads(subprocess.run([ksmith, "devices", "--json"], capture_output=True, text=True, env=env,
                                    check=True).stdout)
if len([d for d in devices if d["api"] == "opencl" and "Portable" in d.get("platform", "")]) < 2:
    print("SKIP: POCL_DEVICES=\"pthread pthread\" gives no two PoCL devices here")
    sys.exit(77)
work = tempfile.mkdtemp(prefix="check_mpi-")
env["KSMITH_CACHE_DIR"] = os.path.join(work, "cache")
env["TMPDIR"] = work  # the farm's folders, left behind by the ranks this test kills, go with it


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def mpi(np, *args, timeout=600):
    return subprocess.run([mpirun, "--oversubscribe", "-np", str(np), ksmith, *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def start(np, *args):
    return subprocess.Popen([mpirun, "--oversubscribe", "-np", str(np), ksmith, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)


def rank_pid(launcher, rank):
    """The pid of rank `rank` of the job `launcher` started (a child of mpirun)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if ppid == launcher.pid and f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ:
            return int(pid)
    return None


def outcome(job, timeout, what):
    """What the job printed once it ended; fails when it runs on past timeout seconds."""
    try:
        return job.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        fail(what)


def rows(db):
    with sqlite3.connect(db) as c:
        return {i: (seq, rec) for i, seq, rec in c.execute("SELECT id, eval_seq, record FROM candidates WHERE record != ''")}


def devices_of(db):
    return {json.loads(rec)["device"]["selector"] for _, rec in rows(db).values()}


suite = os.path.join(work, "suite")
os.makedirs(suite)
names = ("softmax", "gelu", "matvec")
for name in names:
    shutil.copy(os.path.join(source, "examples", name + ".ks"), suite)
sizes = os.path.join(work, "sizes.txt")
with open(sizes, "w") as f:
    f.write("softmax N=64,D=1024\ngelu N=256,D=1024\nmatvec M=64,K=4096\n")

# 1. Three ranks, one without a device; rank 1 killed with -9; resumed on two ranks.
tuned = os.path.join(work, "tuned")
common = ["tune", suite, "--sizes", sizes, "--out", tuned, "--devices", "all", "--workers", "1",
          "--budget-per-problem", "16", "--minutes-per-problem", "1"]
job = start(3, *common)
deadline = time.time() + 300
on_rank1 = None
while time.time() < deadline and on_rank1 is None:
    for name in names:
        db = os.path.join(tuned, "runs", name, "evolve.db")
        try:
            if "opencl:1" in devices_of(db) and len(rows(db)) >= 3:
                on_rank1 = name
        except sqlite3.Error:
            pass
    time.sleep(0.2)
if on_rank1 is None:
    os.killpg(job.pid, signal.SIGKILL)
    fail(f"no problem was evaluated on rank 1 within 300 s: {job.communicate()[0] if job.poll() is not None else ''}")
victim = rank_pid(job, 1)
if victim is None:
    os.killpg(job.pid, signal.SIGKILL)
    fail("rank 1's process was not found")
os.kill(victim, signal.SIGKILL)
out = outcome(job, 60, "the job went on for 60 s after rank 1 was killed")
if job.returncode == 0 or not re.search(r"rank 1\b", out):
    fail(f"killing rank 1: exit {job.returncode}, and the message does not name rank 1:\n{out}")
if "rank 2" not in out or "idles" not in out:
    fail(f"rank 2, without a device, did not say that it idles:\n{out}")
time.sleep(1)
if subprocess.run(["pgrep", "-f", f"{tuned}/runs"], capture_output=True).returncode == 0:
    fail("a search of the killed job still runs")
before = {n: rows(os.path.join(tuned, "runs", n, "evolve.db")) for n in names
          if os.path.exists(os.path.join(tuned, "runs", n, "evolve.db"))}
r = mpi(2, *common, "--resume")
if r.returncode != 0:
    fail(f"the resumed tuning exited {r.returncode}:\n{r.stdout}{r.stderr}")
seen = set()
for name in names:
    summary = json.load(open(os.path.join(tuned, name + ".json")))
    if summary.get("status") != "finished":
        fail(f"{name}.json: status {summary.get('status')}")
    db = os.path.join(tuned, "runs", name, "evolve.db")
    after = rows(db)
    for i, row in before.get(name, {}).items():
        if after.get(i) != row:
            fail(f"{name}: candidate {i}'s record, written before the kill, changed or went missing in the resume")
    seqs = sorted(seq for seq, _ in after.values() if seq > 0)
    if seqs != list(range(1, len(seqs) + 1)) or len(seqs) > 16:
        fail(f"{name}: evaluations {seqs}: each once, at most the budget of 16")
    with sqlite3.connect(db) as c:
        if c.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            fail(f"{name}: the database fails its integrity check")
    seen |= devices_of(db)
if seen != {"opencl:0", "opencl:1"}:
    fail(f"records from {sorted(seen)}: expected rank 0's opencl:0 and rank 1's opencl:1")
print(f"ok: three ranks (one idle), rank 1 killed while it evaluated {on_rank1}, resumed on two ranks: "
      f"nothing lost or repeated")

# 2. A rank that hangs.
hung = os.path.join(work, "hung")
job = start(2, "tune", suite, "--sizes", sizes, "--out", hung, "--devices", "all", "--workers", "1",
            "--budget-per-problem", "200", "--minutes-per-problem", "1", "--rank-timeout", "3")
deadline = time.time() + 120
victim = None
while time.time() < deadline and victim is None:
    victim = rank_pid(job, 1) if os.path.exists(os.path.join(hung, "runs")) else None
    time.sleep(0.2)
if victim is None:
    os.killpg(job.pid, signal.SIGKILL)
    fail("the second job's rank 1 was not found")
time.sleep(2)
os.kill(victim, signal.SIGSTOP)
try:
    out = outcome(job, 120, "a hung rank did not end the job within 120 s")
finally:
    try:
        os.kill(victim, signal.SIGCONT)
        os.kill(victim, signal.SIGKILL)
    except ProcessLookupError:
        pass
if job.returncode == 0 or "rank 1 on" not in out or "has sent nothing for" not in out:
    fail(f"a hung rank: exit {job.returncode}, without a message naming it:\n{out}")
for name in names:
    db = os.path.join(hung, "runs", name, "evolve.db")
    if os.path.exists(db):
        with sqlite3.connect(db) as c:
            if c.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                fail(f"{name}: the database fails its integrity check after the hang")
print("ok: a hung rank ends the job, named")

# 3. Another build on rank 1: the build ID patched in a copy.
other = os.path.join(work, "ksmith-other")
shutil.copy(ksmith, other)
notes = subprocess.run(["readelf", "-n", other], capture_output=True, text=True).stdout
build_id = bytes.fromhex(re.search(r"Build ID: ([0-9a-f]+)", notes).group(1))
with open(other, "r+b") as f:
    data = f.read()
    at = data.find(build_id)
    f.seek(at + len(build_id) - 1)
    f.write(bytes([data[at + len(build_id) - 1] ^ 0xFF]))
refused = os.path.join(work, "refused")
args = ["tune", suite, "--sizes", sizes, "--out", refused, "--devices", "all"]
r = subprocess.run([mpirun, "-np", "1", ksmith, *args, ":", "-np", "1", other, *args], capture_output=True, text=True,
                   env=env, timeout=120)
if r.returncode == 0 or "rank 1 on" not in r.stderr or "runs another ksmith than rank 0" not in r.stderr:
    fail(f"another build on rank 1: exit {r.returncode}:\n{r.stderr}")
if os.path.exists(refused):
    fail("a refused job made its folder")
print("ok: another build on rank 1 refused")

# 3b. A hostfile that names a host that cannot be reached: MPI's own error, before ksmith starts.
hosts = os.path.join(work, "hosts")
with open(hosts, "w") as f:
    f.write("localhost slots=1\nno-such-host-ks.invalid slots=1\n")
unreached = os.path.join(work, "unreached")
r = subprocess.run([mpirun, "-np", "2", "--hostfile", hosts, ksmith, "tune", suite, "--sizes", sizes, "--out", unreached,
                    "--devices", "all"], capture_output=True, text=True, env=env, timeout=120)
said = r.stdout + r.stderr
if r.returncode == 0 or os.path.exists(unreached) or not ("no-such-host" in said or "ORTE" in said):
    fail(f"a hostfile naming an unreachable host: exit {r.returncode}, folder made: {os.path.exists(unreached)}:\n{said}")
print("ok: an unreachable host in the hostfile: MPI's error, nothing made")

# 4. One search over both ranks, rank 1 in another folder: the paths rank 0 names are
# relative to its own, so rank 1 evaluates only what it was sent (no shared files).
shutil.copy(os.path.join(source, "examples/softmax.ks"), work)
elsewhere = os.path.join(work, "elsewhere")
os.makedirs(elsewhere)
args = ["evolve", "softmax.ks", "--devices", "all", "--workers", "1", "--budget", "10", "--size", "N=64,D=1024",
        "--out", "evolve"]
r = subprocess.run([mpirun, "-np", "1", "-wdir", work, ksmith, *args, ":", "-np", "1", "-wdir", elsewhere, ksmith,
                    *args], capture_output=True, text=True, env=env, timeout=600)
if r.returncode != 0:
    fail(f"mpirun -np 2 ksmith evolve exited {r.returncode}:\n{r.stdout}{r.stderr}")
db = os.path.join(work, "evolve", "evolve.db")
if devices_of(db) != {"opencl:0", "opencl:1"}:
    fail(f"the search evaluated on {devices_of(db)}, not on both ranks")
specs = {json.loads(rec)["spec"] for _, rec in rows(db).values()}
if specs != {"evolve/softmax.ks"}:
    fail(f"the records name the specs {specs}: rank 1's, evaluated from its copy, should name rank 0's path")
if os.listdir(elsewhere):
    fail(f"rank 1 left files in its folder: {os.listdir(elsewhere)}")
print("ok: one search on two ranks, rank 1 in another folder evaluating what it was sent")
shutil.rmtree(work, ignore_errors=True)
