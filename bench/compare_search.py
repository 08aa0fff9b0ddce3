#!/usr/bin/env python3
"""One search against another, from bench/compare_search.sh's run databases: for
each example, the best speedup found against evaluations in each arm, and how many
evaluations the challenger took to reach the baseline's final best. Prints a
markdown table and writes OUT/search_curves.svg (a panel per example).

Usage: compare_search.py OUT CHALLENGER BASELINE   (arms: model, mutator, random)
"""
import math
import pathlib
import sqlite3
import sys

out, challenger, baseline = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def curve(db):
    """Best speedup so far after each evaluation (the speedups as first measured)."""
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT eval_seq, status, speedup FROM candidates WHERE eval_seq > 0 ORDER BY eval_seq")
        best, points = 0.0, []
        for seq, status, speedup in rows:
            if status == "correct":
                best = max(best, speedup)
            points.append(best)
        return points


names = sorted({p.name.rsplit("-", 1)[0] for p in out.iterdir() if (p / "evolve.db").exists()})
rows, panels = [], []
for name in names:
    m, r = out / f"{name}-{challenger}" / "evolve.db", out / f"{name}-{baseline}" / "evolve.db"
    if not (m.exists() and r.exists()):
        continue
    cm, cr = curve(m), curve(r)
    target = cr[-1] if cr else 0
    reach = next((i + 1 for i, v in enumerate(cm) if v >= target), None)
    budget = len(cr)
    half = reach is not None and reach <= budget / 2
    rows.append((name, cr[-1] if cr else 0, cm[-1] if cm else 0, reach, budget, half))
    panels.append((name, cm, cr))

print(f"| example | {baseline}: final best | {challenger}: final best | {challenger}'s evaluations to reach "
      f"{baseline}'s best | within half the budget |")
print("|---|---|---|---|---|")
for name, rb, mb, reach, budget, half in rows:
    print(f"| {name} | {rb:.2f}x | {mb:.2f}x | {reach if reach else 'never'} of {budget} | {'yes' if half else 'no'} |")
wins = sum(1 for row in rows if row[5])
print(f"\n{challenger} reached {baseline}'s final best within half the budget on {wins} of {len(rows)} examples.")

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
