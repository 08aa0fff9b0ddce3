#!/usr/bin/env python3
"""Merges a benchmark run (ksmith records and the PyTorch peer) into a markdown table.

Usage: report.py SIZES_FILE OUT_DIR
"""
import json
import pathlib
import sys


def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def problems(sizes_file):
    """(name, sizes) for each line of a sizes file."""
    for line in open(sizes_file):
        line = line.split("#")[0].strip()
        if line:
            yield line.split()


def main():
    sizes_file, out = sys.argv[1], pathlib.Path(sys.argv[2])
    peer = load(out / "torch.json") or {}
    peer_problems = peer.get("problems", {})
    device = None
    rows = []
    for name, sizes in problems(sizes_file):
        record = load(out / f"ksmith_{name}.json")
        p = peer_problems.get(name, {})
        torch_ms = f"{p['median_ms']:.3f}" if "median_ms" in p else ("unavailable" if not peer else p.get("error", "?")[:40])
        if not record:
            err = (out / f"ksmith_{name}.err")
            reason = err.read_text().strip().splitlines()[0][:60] if err.exists() and err.read_text().strip() else "no record"
            rows.append(f"| {name} | {sizes} | FAILED: {reason} | | | | | {torch_ms} | |")
            continue
        device = device or record["device"]
        check = record["check"]
        correct = "yes" if check["passed"] else f"NO ({check['worst_error']})"
        t = record.get("time")
        if not t:
            rows.append(f"| {name} | {sizes} | {correct} | not timed | | | | {torch_ms} | |")
            continue
        ratio = f"{t['median_ms'] / p['median_ms']:.1f}x" if "median_ms" in p and p["median_ms"] > 0 else ""
        rows.append(f"| {name} | {sizes} | {correct} | {t['median_ms']:.3f} | {100 * t['cv']:.2f}% | "
                    f"{t['gbytes_per_s']:.1f} | {t['gflops_per_s']:.1f} | {torch_ms} | {ratio} |")
    if device:
        print(f"Device: {device['name']} ({device['platform']}, {device['version']}, driver {device['driver']})")
    if peer:
        print(f"Peer: PyTorch {peer.get('torch', '?')} eager on {peer.get('device', '?')}, float32, TF32 off")
    else:
        print("Peer: PyTorch unavailable")
    print()
    print("| problem | sizes | correct (check sizes) | naive ms | spread | GB/s | GFLOP/s | PyTorch ms | naive / PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    scheduled = []
    for name, sizes in problems(sizes_file):
        record = load(out / f"ksmith_{name}_scheduled.json")
        naive = load(out / f"ksmith_{name}.json")
        if record is None and not (out / f"ksmith_{name}_scheduled.err").exists():
            continue
        if not record or not record.get("time") or not naive or not naive.get("time"):
            err = out / f"ksmith_{name}_scheduled.err"
            reason = err.read_text().strip().splitlines()[0][:80] if err.exists() and err.read_text().strip() else "no record"
            scheduled.append(f"| {name} | {sizes} | FAILED: {reason} | | | | | | |")
            continue
        t, n = record["time"], naive["time"]
        p = peer_problems.get(name, {})
        torch_ms = f"{p['median_ms']:.3f}" if "median_ms" in p else "unavailable"
        vs_torch = f"{t['median_ms'] / p['median_ms']:.2f}x" if "median_ms" in p and p["median_ms"] > 0 else ""
        correct = "yes" if record["check"]["passed"] else "NO"
        scheduled.append(f"| {name} | {sizes} | {correct} | {n['median_ms']:.3f} | {t['median_ms']:.3f} | "
                         f"{n['median_ms'] / t['median_ms']:.1f}x | {100 * t['cv']:.2f}% | {t['gbytes_per_s']:.1f} | "
                         f"{t['gflops_per_s']:.1f} | {torch_ms} | {vs_torch} |")
    if scheduled:
        print()
        print("Hand-written schedules (examples/NAME.sched):")
        print()
        print("| problem | sizes | correct | naive ms | scheduled ms | speedup over naive | spread | GB/s | GFLOP/s "
              "| PyTorch ms | scheduled / PyTorch |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(scheduled))


if __name__ == "__main__":
    main()
