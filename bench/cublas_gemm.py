"""cuBLAS's fp32 GEMM (PyTorch, TF32 off unless --tf32; --dtype bf16 or f16: at that type, f32
accumulation) at the GEMM probes' shapes, a @ b (T=0) and x @ w.T (T=1): the median of 25 timed runs. Used by `bench/gpu_job.sh gemm` on the GPU machine
(and by the GEMM probes of results.md, at commit 195f3f6)."""
import sys

import torch

from cuda_timing import median_ms

# --tf32: the matmuls in TF32, as PyTorch does when allowed (issue 46's TF32 peer).
tf32 = "--tf32" in sys.argv
dtype = sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "fp32"
kind = {"fp32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
torch.backends.cuda.matmul.allow_tf32 = tf32
for (m, n, k) in [(4096, 4096, 4096), (1024, 8192, 8192)]:
    for t in (False, True):
        a = torch.randn(m, k, device='cuda', dtype=kind)
        b = torch.randn(n, k, device='cuda', dtype=kind) if t else torch.randn(k, n, device='cuda', dtype=kind)
        ms = median_ms((lambda: a @ b.T) if t else (lambda: a @ b))
        print(f"torch {'tf32' if tf32 else dtype} {m}x{n}x{k} T={int(t)}: {ms:.4f} ms = {2 * m * n * k / ms / 1e9:.1f} TFLOP/s")
