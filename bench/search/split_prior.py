#!/usr/bin/env python3
"""Splits a cost-model prior (ksmith export --cost-rows, e.g. tuned/DEVICE/cost_prior.jsonl)
by problem: DIR/NAME-prior.jsonl holds every run of kernel NAME, each run's line then its
candidates' lines, as they were. With KS_PRIOR_DIR=DIR, bench/search/run_arm.sh gives each
example's model the other problems' files and never its own: a prior of the device, not
of the problem (leave one problem out).

Usage: split_prior.py PRIOR.jsonl DIR
"""
import json
import pathlib
import sys

prior, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
by_kernel, runs, kernel = {}, {}, None
for number, line in enumerate(prior.read_text().splitlines(), 1):
    if not line.strip():
        continue
    row = json.loads(line)
    if "run" in row:
        kernel = row["run"]["kernel"]
        runs[kernel] = runs.get(kernel, 0) + 1
    elif kernel is None:
        sys.exit(f"{prior}:{number}: a candidate before any run")
    by_kernel.setdefault(kernel, []).append(line)
for kernel, lines in sorted(by_kernel.items()):
    (out / f"{kernel}-prior.jsonl").write_text("\n".join(lines) + "\n")
    print(f"{kernel}: {runs[kernel]} runs, {len(lines)} lines")
