"""The median of a CUDA callable's timed runs (CUDA events, after three warm-up runs): the
cuBLAS and SDPA peers' clock (bench/cublas_gemm.py, bench/sdpa_attention.py)."""
import torch


def median_ms(f, runs=25):
    for _ in range(3):
        f()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(runs):
        s.record()
        f()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return sorted(ts)[runs // 2]
