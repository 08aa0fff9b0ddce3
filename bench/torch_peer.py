#!/usr/bin/env python3
"""PyTorch (the peer) on the same problems and sizes as a ksmith benchmark run.

Usage: torch_peer.py SIZES_FILE OUT_JSON [--device cuda|cpu] [--no-compile] [--tf32] [--dtype f32|f16|bf16]
                     [--peers DIR]

Each problem is a module in KernelBench's form (examples/NAME.py), found through its
peer entry (DIR/NAME.peer.json, default bench/peers/, written by `ksmith import`): the
module is loaded with the sizes line's values as its globals (the entry maps the spec's
size names to them), then built as KernelBench builds it, Model(*get_init_inputs()) and
get_inputs(), moved to the device at the spec's floating type (the entry's "dtype": f32, or
a half module's f16 or bf16; a module of mixed types as it is) with TF32 off (kernelsmith
computes in float32; with --dtype, the peer of `ksmith bench --dtype`, every floating
tensor at that type, and the JSON says "dtype"; with --tf32, the peer of `ksmith bench --precision tf32`, TF32 is allowed for
matmuls and cuDNN alike, and the JSON says "precision": "tf32"), and timed in eager
mode and, where this PyTorch has it, under torch.compile (KernelBench's second
baseline). Times are medians over repeated runs after warm-up (the
compile happens in the warm-up): CUDA events on the GPU, perf_counter on the CPU. A
problem without a peer entry, whose module fails to build or run, or that torch.compile
fails on, says so in its entry. No PyTorch at all, or --device cuda without CUDA, is an
error (a message on stderr, exit status 1): a peer that cannot run is never a silent "no
speedups". `ksmith bench --peer bench/torch_peer.py` runs this script itself.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser()
parser.add_argument("sizes_file")
parser.add_argument("out_json")
parser.add_argument("--device", choices=["cuda", "cpu"])
parser.add_argument("--no-compile", action="store_true", help="eager only")
parser.add_argument("--tf32", action="store_true", help="TF32 allowed for matmuls and convolutions (cuDNN)")
parser.add_argument("--dtype", choices=["f32", "f16", "bf16"],
                    help="every floating parameter and input at this type (ksmith bench --dtype)")
parser.add_argument("--peers", default=os.path.join(HERE, "peers"), help="the folder of NAME.peer.json entries")
args = parser.parse_args()

try:
    import torch
except ImportError as e:
    sys.exit(f"torch_peer.py: PyTorch is not installed for {sys.executable} ({e}); on Debian: apt install python3-torch")
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import ksmith_import  # noqa: E402  the importer's loader: a module at given sizes, built as KernelBench builds it


def problem(name, sizes, dev):
    """(run, inputs) for one line of the sizes file: the module of NAME's peer entry at those sizes."""
    entry_path = os.path.join(args.peers, name + ".peer.json")
    if not os.path.exists(entry_path):
        raise LookupError(f"no peer entry {entry_path} (ksmith import MODEL.py -o {name}.ks writes one)")
    with open(entry_path) as f:
        entry = json.load(f)
    unknown = [s for s in sizes if s not in entry["sizes"]]
    if unknown:
        raise LookupError(f"{', '.join(unknown)} not a size of {name} (its sizes: {', '.join(entry['sizes'])})")
    module = os.path.normpath(os.path.join(os.path.dirname(entry_path), entry["module"]))
    # Made on the device where this PyTorch can (2.0 on): a GPU problem's inputs of gigabytes are not
    # drawn on the CPU first. The values differ from the CPU's draw; the times do not depend on them.
    on_device = hasattr(torch, "set_default_device")
    try:
        namespace = ksmith_import.load_module(module, {entry["sizes"][s]: v for s, v in sizes.items()})
        torch.manual_seed(0)
        if on_device:
            torch.set_default_device(dev)
        model, inputs = ksmith_import.build_model(namespace)
    except ksmith_import.ImportFailure as e:
        raise RuntimeError(f"{module}: {e}")
    finally:
        if on_device:
            torch.set_default_device("cpu")
    dtype = args.dtype or entry.get("dtype", "f32")
    if dtype == "mixed":  # the module's own types, as its spec declares them (float64 is f32 there)
        wide = lambda x: x.to(dev, torch.float32 if x.dtype == torch.float64 else x.dtype)  # noqa: E731
        return model.to(dev)._apply(wide), [wide(x) for x in inputs]
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    model = model.to(dev, dtype)
    inputs = [x.to(dev, dtype) if x.is_floating_point() else x.to(dev) for x in inputs]
    return model, inputs


def time_ms(run, inputs, dev):
    with torch.no_grad():
        for _ in range(3):
            run(*inputs)
        if dev == "cuda":
            torch.cuda.synchronize()
            once = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            once[0].record()
            run(*inputs)
            once[1].record()
            torch.cuda.synchronize()
            est = max(once[0].elapsed_time(once[1]), 1e-3)
            reps = max(1, min(1000, int(5.0 / est)))  # batches of at least 5 ms, like ksmith
            samples = []
            for _ in range(10):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(reps):
                    run(*inputs)
                end.record()
                torch.cuda.synchronize()
                samples.append(start.elapsed_time(end) / reps)
        else:
            samples = []
            for _ in range(10):
                t0 = time.perf_counter()
                run(*inputs)
                samples.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(samples)
    cv = statistics.pstdev(samples) / statistics.mean(samples) if len(samples) > 1 else 0.0
    return med, cv


def compile_status(dev):
    """'available', or why torch.compile cannot serve here."""
    if args.no_compile:
        return "not asked for"
    if not hasattr(torch, "compile"):
        return f"unavailable (PyTorch {torch.__version__} has none)"
    return "available"


def main():
    dev = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dev == "cuda" and not torch.cuda.is_available():
        sys.exit(f"torch_peer.py: --device cuda, but PyTorch {torch.__version__} sees no CUDA device")
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
    compiling = compile_status(dev)
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
               "precision": "tf32" if args.tf32 else "fp32", "compile": compiling, "problems": {}}
    if args.dtype:
        results["dtype"] = args.dtype
    for line in open(args.sizes_file):
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, assignments = line.split()
        s = {k: int(v) for k, v in (a.split("=") for a in assignments.split(","))}
        entry = results["problems"][name] = {}
        try:
            run, inputs = problem(name, s, dev)
            entry["median_ms"], entry["cv"] = time_ms(run, inputs, dev)
            if compiling == "available":
                try:
                    started = time.perf_counter()
                    entry["compiled_ms"], entry["compiled_cv"] = time_ms(torch.compile(run), inputs, dev)
                    entry["compile_and_time_s"] = time.perf_counter() - started
                except Exception as e:  # one problem torch.compile cannot take
                    entry["compile_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            del run, inputs
            if dev == "cuda":
                torch.cuda.empty_cache()
        except Exception as e:  # report, carry on with the rest
            entry["error"] = f"{type(e).__name__}: {e}"
        print(f"torch {name}: {entry}", flush=True)
    with open(args.out_json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
