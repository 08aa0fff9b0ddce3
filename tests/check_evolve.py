#!/usr/bin/env python3
"""`ksmith evolve` as a user runs it, on the default OpenCL device (PoCL here):

1. a short run finishes, beats the naive kernel, leaves best.sched, best.cl, best.json
   and report.html (checked in headless Chromium by check_report.py --page), and
   `ksmith runs` and `ksmith export` read its database;
2. kill -9 in the middle of a run, then --resume: the run finishes with every
   evaluation recorded once, and the database passes PRAGMA integrity_check;
3. Ctrl-C (SIGINT): the run stops after the evaluation in hand, exits 130 and says
   how to resume; the resume finishes it.

SKIPs (exit 77) without an OpenCL device.
Usage: check_evolve.py KSMITH SOURCE_DIR
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from check_common import ksmith_and_source

ksmith, source = ksmith_and_source()
spec = os.path.join(source, "examples/softmax.ks")
work = tempfile.mkdtemp(prefix="check_evolve-")
common = ["--target", "opencl", "--size", "N=64,D=1024", "--workers", "2"]


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def evaluations(db):
    with sqlite3.connect(db) as c:
        return [row[0] for row in c.execute("SELECT eval_seq FROM candidates WHERE eval_seq > 0")]


def integrity(db):
    with sqlite3.connect(db) as c:
        return c.execute("PRAGMA integrity_check").fetchone()[0]


def finished_once(db, budget, what):
    seqs = evaluations(db)
    if sorted(seqs) != list(range(1, budget + 1)):
        fail(f"{what}: evaluations {sorted(seqs)}, expected each of 1..{budget} once")
    if integrity(db) != "ok":
        fail(f"{what}: integrity_check says {integrity(db)}")
    with sqlite3.connect(db) as c:
        status = c.execute("SELECT status FROM runs").fetchall()
    if status != [("finished",)]:
        fail(f"{what}: run status {status}")


# 1. A short run and what it leaves.
# 12 evaluations (8 before): more sketches, so that one beats the naive kernel when
# timed again; the test runs alone (tests/CMakeLists.txt), as other timing tests do.
def short_run(out, last):
    """The short run in out, checked; its output, database, report check and best. Its
    best must beat the naive kernel when timed again; where it does not and last is
    false, the caller runs it once more (the timing of a shared 2-core machine has noisy
    minutes: on 2026-11-27 one run's candidates timed 1.1x in their evaluations and 0.7x
    in the final retime a few seconds later, the next eight runs 1.3x to 1.9x)."""
    r = subprocess.run([ksmith, "evolve", spec, "--budget", "12", "--out", out] + common, capture_output=True,
                       text=True, timeout=900)
    if r.returncode:
        fail(f"evolve exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    if "softmax: best " not in r.stdout or "report:" not in r.stdout:
        fail(f"evolve did not say its best and its report:\n{r.stdout}")
    if "timed again beside the best" not in r.stdout + r.stderr or "timing again failed" in r.stdout + r.stderr:
        fail(f"the best few were not timed again side by side at the end:\n{r.stdout}\n{r.stderr}")
    for name in ["best.sched", "best.cl", "best.json", "report.html", "evolve.db"]:
        if not os.path.exists(os.path.join(out, name)):
            fail(f"no {name} in {out}")
    db = os.path.join(out, "evolve.db")
    finished_once(db, 12, "short run")
    report = subprocess.run([sys.executable, os.path.join(source, "tests/check_report.py"), "--page",
                             os.path.join(out, "report.html")], capture_output=True, text=True)
    if report.returncode not in (0, 77):
        fail(f"the report of the short run:\n{report.stdout}{report.stderr}")
    runs = json.loads(subprocess.run([ksmith, "runs", db, "--json"], capture_output=True, text=True, check=True).stdout)
    if len(runs) != 1 or runs[0]["evaluations"] != 12 or runs[0]["status"] != "finished" or "best" not in runs[0]:
        fail(f"ksmith runs: {runs}")
    best = runs[0]["best"]["speedup"]
    if best <= 1.0 and not last:
        return None
    if best <= 1.0:
        with sqlite3.connect(db) as c:
            rows = c.execute("SELECT seq, status, speedup, retimed_speedup, verdict, note FROM candidates ORDER BY seq")
            seen = "\n".join(" | ".join(str(v)[:100] for v in row) for row in rows)
        fail(f"the short run did not beat the naive kernel: {best}\n{r.stdout}\n{seen}")
    return r, db, report, best


short = short_run(os.path.join(work, "short"), last=False)
if short is None:
    print("note: the short run's best did not beat the naive kernel when timed again; once more")
    short = short_run(os.path.join(work, "short_again"), last=True)
r, db, report, best = short
steps = [json.loads(line) for line in
         subprocess.run([ksmith, "export", db], capture_output=True, text=True, check=True).stdout.splitlines()]
if len(steps) < 11:
    fail(f"export: {len(steps)} steps of 12 evaluations")
# --best-steps keeps exactly the correct children that gained at least --min-gain over
# their parent: at the default (1.05, which a short run may not reach) and at the median
# gain of the run's correct steps (which at least one reaches).
gains = sorted(s["gain"] for s in steps if s["gain"] is not None)
if not gains:
    fail("export: no correct child with a gain over its parent")
for min_gain in [None, gains[len(gains) // 2]]:
    flags = ["--best-steps"] + ([] if min_gain is None else ["--min-gain", repr(min_gain)])
    best_steps = [json.loads(line) for line in subprocess.run([ksmith, "export", db] + flags, capture_output=True,
                                                             text=True, check=True).stdout.splitlines()]
    threshold = 1.05 if min_gain is None else min_gain
    expected = [s["child"]["id"] for s in steps if s["gain"] is not None and s["gain"] >= threshold]
    if [s["child"]["id"] for s in best_steps] != expected or not all(
            s["child"]["record"]["status"] == "correct" for s in best_steps):
        fail(f"export {' '.join(flags)}: children {[s['child']['id'] for s in best_steps]}, expected {expected}")
if not best_steps:
    fail(f"export --best-steps --min-gain {gains[len(gains) // 2]}: no step")
print(f"short run: best {best:.2f}x, {len(steps)} steps exported; {report.stdout.strip()}")


def start(out, budget):
    return subprocess.Popen([ksmith, "evolve", spec, "--budget", str(budget), "--out", out] + common,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_evaluations(db, n, process):
    deadline = time.time() + 600
    while time.time() < deadline:
        if process.poll() is not None:
            fail(f"the run ended before it was interrupted:\n{process.stderr.read()}")
        try:
            if len(evaluations(db)) >= n:
                return
        except sqlite3.Error:
            pass
        time.sleep(0.2)
    fail("no evaluations within 600 s")


# 2. kill -9 mid-run, then --resume.
out = os.path.join(work, "killed")
db = os.path.join(out, "evolve.db")
p = start(out, 10)
wait_for_evaluations(db, 4, p)
p.send_signal(signal.SIGKILL)
p.wait()
if integrity(db) != "ok":
    fail("after kill -9 the database is broken")
done_before = len(evaluations(db))
r = subprocess.run([ksmith, "evolve", spec, "--budget", "10", "--out", out, "--resume"] + common, capture_output=True,
                   text=True, timeout=900)
if r.returncode:
    fail(f"the resume exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
if "resuming run 1" not in r.stderr:
    fail(f"the resume did not say so:\n{r.stderr}")
finished_once(db, 10, "kill -9 and resume")
print(f"kill -9 after {done_before} evaluations, resumed to 10: each recorded once, integrity ok")

# 3. Ctrl-C, then --resume.
out = os.path.join(work, "interrupted")
db = os.path.join(out, "evolve.db")
p = start(out, 10)
wait_for_evaluations(db, 3, p)
p.send_signal(signal.SIGINT)
stdout, stderr = p.communicate(timeout=600)
if p.returncode != 130 or "stopped; resume with: ksmith evolve" not in stderr or "--resume" not in stderr:
    fail(f"Ctrl-C: exit {p.returncode}, said:\n{stderr}")
with sqlite3.connect(db) as c:
    if c.execute("SELECT status FROM runs").fetchall() != [("stopped",)]:
        fail("Ctrl-C: the run is not marked stopped")
r = subprocess.run([ksmith, "evolve", spec, "--budget", "10", "--out", out, "--resume"] + common, capture_output=True,
                   text=True, timeout=900)
if r.returncode:
    fail(f"the resume after Ctrl-C exited {r.returncode}:\n{r.stderr}")
finished_once(db, 10, "Ctrl-C and resume")
print("Ctrl-C: stopped with exit 130 and the resume command; resumed to 10")
print("PASS")
