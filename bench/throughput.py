#!/usr/bin/env python3
"""Evaluations per minute of `ksmith evolve` runs, and where the time went: from their
run databases, the run's time and each evaluation's phases (the record's `seconds`:
compile, check, timed sizes; the child's wall time besides them is its start, the
device's opening and the wait for a worker's turn). Prints a markdown table.

Usage: throughput.py DB [DB...]
"""
import json
import sqlite3
import sys

print("| run | evaluations | run s | per minute | compile | check | timed sizes | start and device |")
print("|---|---|---|---|---|---|---|---|")
total = {"n": 0, "run": 0.0, "compile": 0.0, "check": 0.0, "timed": 0.0, "wall": 0.0}
for path in sys.argv[1:]:
    with sqlite3.connect(path) as c:
        try:
            kernel, seconds = c.execute("SELECT kernel, seconds FROM runs ORDER BY id DESC").fetchone()
        except (sqlite3.Error, TypeError):
            continue
        phases = {"compile": 0.0, "check": 0.0, "timed": 0.0}
        wall = 0.0
        rows = c.execute("SELECT seconds, record FROM candidates WHERE eval_seq > 0").fetchall()
        for child_seconds, record in rows:
            wall += child_seconds
            try:
                for k, v in json.loads(record).get("seconds", {}).items():
                    phases[k] += v
            except ValueError:
                pass
    n = len(rows)
    rest = max(wall - sum(phases.values()), 0.0)
    share = lambda v: f"{100 * v / wall:.0f}%" if wall else "-"
    print(f"| {kernel} | {n} | {seconds:.0f} | {60 * n / seconds:.1f} | {share(phases['compile'])} | "
          f"{share(phases['check'])} | {share(phases['timed'])} | {share(rest)} |")
    total["n"] += n
    total["run"] += seconds
    total["wall"] += wall
    for k in phases:
        total[k] += phases[k]
rest = max(total["wall"] - total["compile"] - total["check"] - total["timed"], 0.0)
w = total["wall"] or 1
print(f"| all | {total['n']} | {total['run']:.0f} | {60 * total['n'] / max(total['run'], 1e-9):.1f} | "
      f"{100 * total['compile'] / w:.0f}% | {100 * total['check'] / w:.0f}% | {100 * total['timed'] / w:.0f}% | "
      f"{100 * rest / w:.0f}% |")
