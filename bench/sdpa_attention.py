"""PyTorch's scaled_dot_product_attention (its own choice of backend: flash attention where it
can) at the attention examples' GPU size, B=16, H=16, T=1024, D=64, not masked and causal, beside
the examples' own peers (minGPT's matmul, softmax, matmul; the causal one masked_fill first): the
median of 25 timed runs, --dtype bf16 (default), f16 or fp32. The issue-49 figure for attention
at bf16 is against the first; `bench/gpu_job.sh schedules attention` times the examples' peers.
--backends: SDPA under each of PyTorch's backends instead (its own choice, flash attention 2,
cuDNN, memory-efficient, math), and the name of the kernel its own choice runs."""
import sys

import torch
import torch.nn.functional as F

from cuda_timing import median_ms

dtype = sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "bf16"
kind = {"fp32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
torch.backends.cuda.matmul.allow_tf32 = False
B, H, T, D = 16, 16, 1024, 64
q, k, v = (torch.randn(B, H, T, D, device="cuda", dtype=kind) for _ in range(3))
mask = torch.tril(torch.ones(T, T, device="cuda")) == 0


def eager(causal):
    att = (q @ k.transpose(-2, -1)) * 0.125
    if causal:
        att = att.masked_fill(mask, float("-inf"))
    return torch.softmax(att, dim=-1) @ v


flops = 4 * B * H * T * T * D


def backends():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for causal in (False, True):
        row = []
        for name in ("default", "FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION", "MATH"):
            def run():
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.125)
            try:
                if name == "default":
                    ms = median_ms(run)
                else:
                    with sdpa_kernel([getattr(SDPBackend, name)]):
                        ms = median_ms(run)
                row.append(f"{name} {ms:.4f} ms ({flops / ms / 1e9 / (2 if causal else 1):.0f} TFLOP/s)")
            except RuntimeError as e:  # a backend that does not take these inputs
                row.append(f"{name} unavailable ({str(e).splitlines()[0][:80]})")
        print(dtype, "causal" if causal else "full", "|", " | ".join(row), flush=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        F.scaled_dot_product_attention(q, k, v, scale=0.125)
        torch.cuda.synchronize()
    kernels = [e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    print("its own choice runs:", ", ".join(name[:100] for name in kernels))


if "--backends" in sys.argv:
    backends()
    sys.exit(0)
for causal in (False, True):
    sdpa = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.125))
    peer = median_ms(lambda: eager(causal))
    name = "attention_causal" if causal else "attention"
    print(f"{name} {dtype} B={B},H={H},T={T},D={D}: sdpa {sdpa:.4f} ms ({flops / sdpa / 1e9 / (2 if causal else 1):.1f} "
          f"TFLOP/s), the example's peer (eager) {peer:.4f} ms")
