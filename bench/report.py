#!/usr/bin/env python3
"""Merges a benchmark run (ksmith records of each target and the PyTorch peer) into
markdown tables: per target, the naive kernels and the hand-written schedules; with
several targets, the targets side by side.

Usage: report.py SIZES_FILE OUT_DIR [TARGET...]   (default target: opencl)
"""
import json
import pathlib
import sys

TARGET_TITLES = {"opencl": "OpenCL", "spirv": "Vulkan (SPIR-V)"}


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


def failure(out, stem):
    """The first line of a run's error output, or 'no record'."""
    err = out / f"{stem}.err"
    text = err.read_text().strip() if err.exists() else ""
    return text.splitlines()[0][:80] if text else "no record"


def timed(record):
    """Checked (against the interpreter, and the naive kernel where scheduled) and timed."""
    return record and record.get("ok") and "median_ms" in record.get("time", {})


def target_tables(sizes_file, out, target, peer_problems, have_peer):
    """The naive table and the schedules table of one target."""
    device = None
    rows, scheduled = [], []
    for name, sizes in problems(sizes_file):
        stem = f"ksmith_{target}_{name}"
        record = load(out / f"{stem}.json")
        p = peer_problems.get(name, {})
        torch_ms = f"{p['median_ms']:.3f}" if "median_ms" in p else ("unavailable" if not have_peer else p.get("error", "?")[:40])
        if not record:
            rows.append(f"| {name} | {sizes} | FAILED: {failure(out, stem)} | | | | | {torch_ms} | |")
        else:
            device = device or record["device"]
            check = record["check"]
            correct = "yes" if check["passed"] else f"NO ({check['worst_fraction']:.3g} of the error allowed)"
            t = record.get("time")
            if not t or "median_ms" not in t:
                rows.append(f"| {name} | {sizes} | {correct} | not timed | | | | {torch_ms} | |")
            else:
                ratio = f"{t['median_ms'] / p['median_ms']:.1f}x" if p.get("median_ms") else ""
                rows.append(f"| {name} | {sizes} | {correct} | {t['median_ms']:.3f} | {100 * t['cv']:.2f}% | "
                            f"{t['gbytes_per_s']:.1f} | {t['gflops_per_s']:.1f} | {torch_ms} | {ratio} |")
        s = load(out / f"{stem}_scheduled.json")
        if s is None and not (out / f"{stem}_scheduled.err").exists():
            continue
        if not timed(s) or not timed(record):
            scheduled.append(f"| {name} | {sizes} | FAILED: {failure(out, stem + '_scheduled')} | | | | | | | | |")
            continue
        t, n = s["time"], record["time"]
        vs_torch = f"{t['median_ms'] / p['median_ms']:.2f}x" if p.get("median_ms") else ""
        scheduled.append(f"| {name} | {sizes} | yes | {n['median_ms']:.3f} | {t['median_ms']:.3f} | "
                         f"{n['median_ms'] / t['median_ms']:.1f}x | {100 * t['cv']:.2f}% | {t['gbytes_per_s']:.1f} | "
                         f"{t['gflops_per_s']:.1f} | {torch_ms} | {vs_torch} |")
    print(f"### {TARGET_TITLES.get(target, target)}")
    print()
    if device:
        print(f"Device: {device['name']} ({device['platform']}, {device['version']}, driver {device['driver']})")
        print()
    print("| problem | sizes | correct (check sizes) | naive ms | spread | GB/s | GFLOP/s | PyTorch ms | naive / PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if scheduled:
        print()
        print("Hand-written schedules (examples/NAME.sched):")
        print()
        print("| problem | sizes | correct | naive ms | scheduled ms | speedup over naive | spread | GB/s | GFLOP/s "
              "| PyTorch ms | scheduled / PyTorch |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(scheduled))
    print()


def side_by_side(sizes_file, out, targets, peer_problems):
    """Each problem's best time per target: the faster of naive and scheduled."""
    print("### Side by side (milliseconds: the faster of the naive kernel and the hand-written schedule)")
    print()
    print("| problem | " + " | ".join(TARGET_TITLES.get(t, t) for t in targets) + " | PyTorch |")
    print("|---|" + "---|" * (len(targets) + 1))
    for name, sizes in problems(sizes_file):
        cells = []
        for target in targets:
            stem = f"ksmith_{target}_{name}"
            s, n = load(out / f"{stem}_scheduled.json"), load(out / f"{stem}.json")
            runs = [r for r in (n, s) if timed(r)]
            best = min(runs, key=lambda r: r["time"]["median_ms"]) if runs else None
            cells.append(f"{best['time']['median_ms']:.3f}" if timed(best) else "failed: " + failure(
                out, stem + ("_scheduled" if (out / f"{stem}_scheduled.err").exists() else ""))[:60])
        p = peer_problems.get(name, {})
        cells.append(f"{p['median_ms']:.3f}" if "median_ms" in p else "unavailable")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def main():
    sizes_file, out = sys.argv[1], pathlib.Path(sys.argv[2])
    targets = sys.argv[3:] or ["opencl"]
    peer = load(out / "torch.json") or {}
    if peer:
        print(f"Peer: PyTorch {peer.get('torch', '?')} eager on {peer.get('device', '?')}, float32, TF32 off")
    else:
        print("Peer: PyTorch unavailable")
    print()
    for target in targets:
        target_tables(sizes_file, out, target, peer.get("problems", {}), bool(peer))
    if len(targets) > 1:
        side_by_side(sizes_file, out, targets, peer.get("problems", {}))


if __name__ == "__main__":
    main()
