#!/usr/bin/env python3
"""One search against another, from their run databases (bench/search/compare_search.sh's
OUT/NAME-ARM, or bench/search/run_arm.sh's RUNS/NAME-ARM-sSEED, one folder holding both arms):
for each example and seed, the best speedup found against evaluations in each arm, and
the evaluations each arm took to reach a given speedup: 95%, 99% and 100% of the
baseline's final best (timing on the H100 repeats to about 1%, so the last 1% of a
final best is partly the luck of one measurement). Evaluations are counted after the
naive kernel's; and, since a challenger that finds another best never reaches a
lucky measurement of the baseline's, the same levels of the lower of the two final
bests (a speed both reached). Prints a markdown table and writes
OUT/search_curves.svg (a panel per example and seed).

Usage: compare_search.py OUT CHALLENGER BASELINE   (arms: model, mutator, random)
"""
import math
import pathlib
import re
import sqlite3
import statistics
import sys

out, challenger, baseline = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
LEVELS = (0.95, 0.99, 1.0)


def curve(db):
    """Best speedup so far after each evaluation but the naive kernel's (as first measured)."""
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT eval_seq, status, speedup, proposer FROM candidates WHERE eval_seq > 0 "
                         "ORDER BY eval_seq")
        best, points = 1.0, []
        for seq, status, speedup, proposer in rows:
            if proposer == "naive":
                continue
            if status == "correct":
                best = max(best, speedup)
            points.append(best)
        return points


def timed_again(db):
    """The best as timed again at the end beside the naive kernel (0 if never)."""
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COALESCE(MAX(retimed_speedup), 0) FROM candidates").fetchone()[0]


def runs(arm):
    """(name, seed) -> database, for the arm's folders."""
    found = {}
    for p in out.iterdir():
        m = re.fullmatch(rf"(.+)-{re.escape(arm)}(?:-s(\d+))?", p.name)
        if m and (p / "evolve.db").exists():
            found[(m.group(1), m.group(2) or "1")] = p / "evolve.db"
    return found


def reach(points, target):
    return next((i + 1 for i, v in enumerate(points) if v >= target * (1 - 1e-9)), None)


mine, theirs = runs(challenger), runs(baseline)
rows, panels = [], []
# A speed both arms reached: the lower of the two final bests. Against the baseline's
# own final best, a challenger that finds another (often higher) best is counted as
# never reaching a lucky measurement of the baseline's; this level treats both alike.
both = [[0, 0] for _ in LEVELS]
for key in sorted(set(mine) & set(theirs)):
    cm, cr = curve(mine[key]), curve(theirs[key])
    final = cr[-1] if cr else 1.0
    rows.append((key, final, cm[-1] if cm else 1.0, len(cm), len(cr),
                 [(reach(cm, level * final), reach(cr, level * final)) for level in LEVELS],
                 (timed_again(mine[key]), timed_again(theirs[key]))))
    panels.append((f"{key[0]} (seed {key[1]})", cm, cr))
    if cm and cr:
        lower = min(cm[-1], cr[-1])
        for k, level in enumerate(LEVELS):
            both[k][0] += reach(cm, level * lower)
            both[k][1] += reach(cr, level * lower)


def evaluations(row, k, arm):
    """Evaluations the arm (0 challenger, 1 baseline) took to level k; a run that never
    reached it counts its budget plus one: a lower bound."""
    reached = row[5][k][arm]
    return reached if reached is not None else row[3 + arm] + 1


def shown(e):
    return str(e) if e is not None else "never"


head = " | ".join(f"to {int(level * 100)}%: {challenger} / {baseline}" for level in LEVELS)
# The final bests as first measured, then as timed again at the end beside the naive
# kernel (on a noisy device such as PoCL a best as first measured is partly one lucky
# measurement).
print(f"| example | seed | {baseline}: final best | {challenger}: final best | {head} | "
      f"timed again: {challenger} / {baseline} |")
print("|---|---|---|---|" + "---|" * len(LEVELS) + "---|")
for (name, seed), rb, mb, nm, nr, reached, (tm, tb) in rows:
    cells = " | ".join(f"{shown(c)} / {shown(b)}" for c, b in reached)
    print(f"| {name} | {seed} | {rb:.2f}x | {mb:.2f}x | {cells} | {tm:.2f}x / {tb:.2f}x |")
print()
for k, level in enumerate(LEVELS):
    total_c = sum(evaluations(r, k, 0) for r in rows)
    total_b = sum(evaluations(r, k, 1) for r in rows)
    halved = sum(1 for r in rows if r[5][k][0] is not None and r[5][k][1] is not None and 2 * r[5][k][0] <= r[5][k][1])
    first = sum(1 for r in rows if r[5][k][1] == 1)
    print(f"To {int(level * 100)}% of {baseline}'s final best: {challenger} took {total_c} evaluations in all, "
          f"{baseline} {total_b} ({total_c / max(total_b, 1):.2f} of them); {challenger} took half or fewer on "
          f"{halved} of {len(rows)} runs; on {first} others {baseline}'s first proposal reached it, which no search "
          f"can halve.")

print()
for level, (tc, tb) in zip(LEVELS, both):
    print(f"To {int(level * 100)}% of the lower of the two final bests: {challenger} took {tc} evaluations in all, "
          f"{baseline} {tb} ({tc / max(tb, 1):.2f} of them).")

# By example, over its seeds: the median evaluations to each level. One seed's count
# is mostly the luck of its draws: on PoCL, three seeds of the unranked mutator took
# 18, 2 and 1 evaluations to reach 95% of seed 1's conv2d best, and 2, 22 and 1 for
# softmax's.
by_example = {}
for r in rows:
    by_example.setdefault(r[0][0], []).append(r)
if any(len(v) > 1 for v in by_example.values()):
    print()
    print(f"| example | seeds | " + " | ".join(f"median to {int(level * 100)}%: {challenger} / {baseline}"
                                           for level in LEVELS) + " |")
    print("|---|---|" + "---|" * len(LEVELS))
    for name, rs in sorted(by_example.items()):
        cells = []
        for k in range(len(LEVELS)):
            c = statistics.median(evaluations(r, k, 0) for r in rs)
            b = statistics.median(evaluations(r, k, 1) for r in rs)
            cells.append(f"{c:g} / {b:g}")
        print(f"| {name} | {len(rs)} | " + " | ".join(cells) + " |")

# Small multiples: 4 columns, log-scale speedup, the challenger solid, the baseline dashed.
cols, w, h, pad = 4, 260, 150, 34
rows_n = math.ceil(len(panels) / cols)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * w}" height="{rows_n * h + 30}" '
       f'font-family="sans-serif" font-size="10">',
       f'<text x="8" y="18" font-size="13">best speedup against evaluations: {challenger} (solid), {baseline} '
       f'(dashed), same budget, seed and device</text>']
for k, (name, cm, cr) in enumerate(panels):
    x0, y0 = (k % cols) * w, 30 + (k // cols) * h
    top = max(max(cm + cr + [1.0]), 1.0)
    lo, hi = math.log(0.5), math.log(top * 1.2)
    n = max(len(cm), len(cr), 1)
    px = lambda i: x0 + pad + (w - pad - 10) * i / max(n - 1, 1)
    py = lambda v: y0 + h - 22 - (h - 40) * (math.log(max(v, 0.5)) - lo) / (hi - lo)
    svg.append(f'<rect x="{x0 + pad}" y="{y0 + 18}" width="{w - pad - 10}" height="{h - 40}" fill="none" '
               f'stroke="#ccc"/>')
    svg.append(f'<text x="{x0 + pad}" y="{y0 + 13}">{name}</text>')
    for v in (1, top):
        svg.append(f'<text x="{x0 + 2}" y="{py(v) + 3:.1f}">{v:.2g}x</text>')
    for c, dash in ((cm, ""), (cr, ' stroke-dasharray="4 3"')):
        if c:
            path = " ".join(f"{px(i):.1f},{py(v if v > 0 else 0.5):.1f}" for i, v in enumerate(c))
            svg.append(f'<polyline points="{path}" fill="none" stroke="#1f6feb" stroke-width="1.5"{dash}/>')
svg.append("</svg>")
(out / "search_curves.svg").write_text("\n".join(svg))
