#!/usr/bin/env python3
"""PyTorch (the peer) on the same problems and sizes as a ksmith benchmark run.

Usage: torch_peer.py SIZES_FILE OUT_JSON [--device cuda|cpu] [--no-compile]

Each problem is the PyTorch code a KernelBench reference would run, in float32 with
TF32 off (kernelsmith computes in float32), timed in eager mode and, where this
PyTorch has it, under torch.compile (KernelBench's second baseline). Times are
medians over repeated runs after warm-up (the compile happens in the warm-up): CUDA
events on the GPU, perf_counter on the CPU. A problem whose operator this PyTorch
lacks, or that torch.compile fails on, says so in its entry. No PyTorch at all, or
--device cuda without CUDA, is an error (a message on stderr, exit status 1): a peer
that cannot run is never a silent "no speedups". `ksmith bench --peer
bench/torch_peer.py` runs this script itself.
"""
import argparse
import json
import statistics
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("sizes_file")
parser.add_argument("out_json")
parser.add_argument("--device", choices=["cuda", "cpu"])
parser.add_argument("--no-compile", action="store_true", help="eager only")
args = parser.parse_args()

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"torch_peer.py: PyTorch is not installed for {sys.executable} ({e}); on Debian: apt install python3-torch")


def problems(s, dev):
    """name -> (make_inputs, run) at sizes s."""
    r = lambda *shape: torch.rand(*shape, device=dev) * 2 - 1  # noqa: E731  mixed signs, like ksmith's inputs
    return {
        "matmul": (lambda: (r(s["N"], s["N"]), r(s["N"], s["N"])), lambda a, b: a @ b),
        "batched_matmul": (lambda: (r(s["B"], s["M"], s["K"]), r(s["B"], s["K"], s["N"])), torch.bmm),
        "matvec": (lambda: (r(s["M"], s["K"]), r(s["K"])), lambda a, x: a @ x),
        "conv2d": (lambda: (r(s["N"], s["C"], s["H"], s["W"]), r(s["O"], s["C"], s["KH"], s["KW"])),
                   lambda x, w: F.conv2d(x, w, stride=s["S"], padding=s["P"], dilation=s["DIL"])),
        "depthwise_conv2d": (lambda: (r(s["N"], s["C"], s["H"], s["W"]), r(s["C"], 1, s["K"], s["K"])),
                             lambda x, w: F.conv2d(x, w, padding=s["K"] // 2, groups=s["C"])),
        "max_pool2d": (lambda: (r(s["N"], s["C"], s["H"], s["W"]),),
                       lambda x: F.max_pool2d(x, s["K"], s["S"], s["P"])),
        "avg_pool2d": (lambda: (r(s["N"], s["C"], s["H"], s["W"]),), lambda x: F.avg_pool2d(x, s["K"], s["S"])),
        "softmax": (lambda: (r(s["N"], s["D"]),), lambda x: torch.softmax(x, 1)),
        "log_softmax": (lambda: (r(s["N"], s["D"]),), lambda x: torch.log_softmax(x, 1)),
        "layer_norm": (lambda: (r(s["N"], s["D"]), r(s["D"]), r(s["D"])),
                       lambda x, g, b: F.layer_norm(x, (s["D"],), g, b, 1e-5)),
        "group_norm": (lambda: (r(s["N"], s["C"], s["H"], s["W"]), r(s["C"]), r(s["C"])),
                       lambda x, g, b: F.group_norm(x, s["G"], g, b, 1e-5)),
        "rms_norm": (lambda: (r(s["N"], s["D"]), r(s["D"])),
                     lambda x, w: F.rms_norm(x, (s["D"],), w, 1e-6) if hasattr(F, "rms_norm")
                     else x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-6) * w),
        "sum_dim": (lambda: (r(s["B"], s["R"], s["D"]),), lambda x: x.sum(1)),
        "argmax_dim": (lambda: (r(s["B"], s["R"], s["D"]),), lambda x: x.argmax(1)),
        "gelu": (lambda: (r(s["N"], s["D"]),), F.gelu),
        "cross_entropy": (lambda: (r(s["N"], s["C"]), torch.randint(0, s["C"], (s["N"],), device=dev)),
                          F.cross_entropy),
        "mse_loss": (lambda: (r(s["N"], s["D"]), r(s["N"], s["D"])), F.mse_loss),
        "gemm_bias_leaky": (lambda: (r(s["M"], s["K"]), r(s["N"], s["K"]), r(s["N"])),
                            lambda x, w, b: F.leaky_relu((x @ w.T + b) * 2.0, 0.1)),
        "conv_relu_bias": (lambda: (r(s["N"], s["C"], s["H"], s["W"]), r(s["O"], s["C"], s["K"], s["K"]),
                                    r(s["O"]), r(s["O"], 1, 1)),
                           lambda x, w, cb, b: torch.relu(F.conv2d(x, w, cb)) + b),
        "matmul_gelu_softmax": (lambda: (r(s["M"], s["K"]), r(s["N"], s["K"]), r(s["N"])),
                                lambda x, w, b: torch.softmax(F.gelu(x @ w.T + b), 1)),
        "conv_transpose2d": (lambda: (r(s["N"], s["C"], s["H"], s["W"]), r(s["C"], s["O"], s["K"], s["K"])),
                             lambda x, w: F.conv_transpose2d(x, w, stride=s["S"], padding=s["P"])),
    }


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
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    compiling = compile_status(dev)
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
               "compile": compiling, "problems": {}}
    for line in open(args.sizes_file):
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, assignments = line.split()
        s = {k: int(v) for k, v in (a.split("=") for a in assignments.split(","))}
        entry = results["problems"][name] = {}
        try:
            make, run = problems(s, dev)[name]
            inputs = make()
            entry["median_ms"], entry["cv"] = time_ms(run, inputs, dev)
            if compiling == "available":
                try:
                    started = time.perf_counter()
                    entry["compiled_ms"], entry["compiled_cv"] = time_ms(torch.compile(run), inputs, dev)
                    entry["compile_and_time_s"] = time.perf_counter() - started
                except Exception as e:  # one problem torch.compile cannot take
                    entry["compile_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            del inputs
            if dev == "cuda":
                torch.cuda.empty_cache()
        except Exception as e:  # report, carry on with the rest
            entry["error"] = f"{type(e).__name__}: {e}"
        print(f"torch {name}: {entry}", flush=True)
    with open(args.out_json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
