#!/usr/bin/env python3
"""Evaluations per minute of `ksmith evolve` runs, and where the time went: from their
run databases, the run's time and each evaluation's phases (the record's `seconds`:
compile, check, timed sizes; of check and timed, the wait for the device lock, shown
on its own; the child's wall time besides them is its start, the device's opening and
the wait for a worker's turn). Prints a markdown table.

Usage: throughput.py DB [DB...]
"""
import json
import sqlite3
import sys

PHASES = ("compile", "check", "timed", "wait")
print("| run | evaluations | run s | per minute | compile | check | timed sizes | lock wait | start and device |")
print("|---|---|---|---|---|---|---|---|---|")
total = {"n": 0, "run": 0.0, "wall": 0.0, **{k: 0.0 for k in PHASES}}


def row(name, n, run, wall, phases):
    # check and timed include the lock's wait: shown without it.
    rest = max(wall - phases["compile"] - phases["check"] - phases["timed"], 0.0)
    share = lambda v: f"{100 * v / wall:.0f}%" if wall else "-"
    own = dict(phases)
    own["timed"] -= phases["wait"]  # most waits are for the device to itself, in the timed phase
    if own["timed"] < 0:
        own["check"] += own["timed"]
        own["timed"] = 0.0
    print(f"| {name} | {n} | {run:.0f} | {60 * n / max(run, 1e-9):.1f} | {share(own['compile'])} | "
          f"{share(own['check'])} | {share(own['timed'])} | {share(phases['wait'])} | {share(rest)} |")


for path in sys.argv[1:]:
    with sqlite3.connect(path) as c:
        try:
            kernel, seconds = c.execute("SELECT kernel, seconds FROM runs ORDER BY id DESC").fetchone()
        except (sqlite3.Error, TypeError):
            continue
        phases = {k: 0.0 for k in PHASES}
        wall = 0.0
        rows = c.execute("SELECT seconds, record FROM candidates WHERE eval_seq > 0").fetchall()
        for child_seconds, record in rows:
            wall += child_seconds
            try:
                for k, v in json.loads(record).get("seconds", {}).items():
                    if k in phases:
                        phases[k] += v
            except ValueError:
                pass
    row(kernel, len(rows), seconds, wall, phases)
    total["n"] += len(rows)
    total["run"] += seconds
    total["wall"] += wall
    for k in PHASES:
        total[k] += phases[k]
row("all", total["n"], total["run"], total["wall"], total)
