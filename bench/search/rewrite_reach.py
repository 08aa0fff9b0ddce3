#!/usr/bin/env python3
"""Which problems each graph rewrite changes: every KernelBench module of a folder imported with
`ksmith import`, then `ksmith rewrite --json` on the spec at KernelBench's sizes (the module's
own), tabulated as markdown: a row per problem the rewrites change (the steps and the naive
kernels' work before and after, ir/cost.h's graph_work; the rewrites that fuse stages without
cutting work, which `ksmith rewrite` lists apart), the problems none changes, those the
importer does not take, and for each rule the problems it changes.

Usage: bench/search/rewrite_reach.py KSMITH FOLDER [-o REPORT.md] [--timeout S]
FOLDER holds KernelBench's files of a level (KernelBench/levelN/*.py of its repository).
Runs the importer with Debian's Python (as `ksmith import` does); writes specs to a temporary
folder.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ksmith")
    p.add_argument("folder")
    p.add_argument("-o", "--output", default="-")
    p.add_argument("--timeout", type=int, default=600, help="seconds for one import")
    a = p.parse_args()
    modules = sorted((f for f in os.listdir(a.folder) if f.endswith(".py")),
                     key=lambda f: (int(f.split("_")[0]) if f.split("_")[0].isdigit() else 1 << 30, f))
    work = tempfile.mkdtemp(prefix="rewrite_reach-")
    changed, unchanged, refused = [], [], []
    by_rule = collections.defaultdict(list)
    for f in modules:
        name = f[:-3]
        spec = os.path.join(work, name + ".ks")
        try:
            r = subprocess.run([a.ksmith, "import", os.path.join(a.folder, f), "-o", spec, "--peer",
                                os.path.join(work, name + ".peer.json")], capture_output=True, text=True,
                               timeout=a.timeout)
        except subprocess.TimeoutExpired:
            refused.append((name, f"the import took over {a.timeout} s"))
            continue
        if r.returncode:
            refused.append((name, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"))
            continue
        r = subprocess.run([a.ksmith, "rewrite", spec, "--json"], capture_output=True, text=True, timeout=a.timeout)
        if r.returncode:
            refused.append((name, "ksmith rewrite: " + r.stderr.strip()))
            continue
        j = json.loads(r.stdout)
        j.setdefault("fusing", [])  # a ksmith from before issue 47 lists none
        if not j["steps"] and not j["fusing"]:
            unchanged.append(name)
            continue
        changed.append((name, j))
        for rule in sorted({s["rule"] for s in j["steps"] + j["fusing"]}):
            by_rule[rule].append(name.split("_")[0])
        print(f"{name}: {len(j['steps'])} steps, work {j['work_before']:.3g} -> {j['work_after']:.3g}",
              file=sys.stderr, flush=True)
    out = [f"{len(modules)} problems: {len(changed)} changed by a rewrite, {len(unchanged)} by none, "
           f"{len(refused)} not imported.", "",
           "| problem | rewrites | naive work before | after | less | fusing (temporaries' bytes before -> after) |",
           "|---|---|---|---|---|---|"]
    for name, j in changed:
        steps = "; ".join(f"{s['rule']} {s['stage']}" for s in j["steps"])
        fusing = "; ".join(f"{f['rule']} {f['stage']} ({f['temporary_bytes_before']:.3g} -> "
                           f"{f['temporary_bytes_after']:.3g})" for f in j["fusing"])
        out.append(f"| {name} | {steps} | {j['work_before']:.3g} | {j['work_after']:.3g} | "
                   f"{j['work_before'] / j['work_after']:.3g}x | {fusing} |")
    out += ["", "| rule | problems it changes |", "|---|---|"]
    for rule, names in sorted(by_rule.items()):
        out.append(f"| {rule} | {len(names)}: {', '.join(names)} |")
    out += ["", "No rewrite applies: " + ", ".join(n.split("_")[0] for n in unchanged) + ".", "",
            "Not imported: " + "; ".join(f"{n.split('_')[0]} ({why})" for n, why in refused) + "."]
    text = "\n".join(out) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
