"""The error of a GEMM that bench/probes/cl_probe.cpp ran (a kernel of arguments a[M][K],
b[K][N], c[M][N], as the tensor-core probe bench/probe_gemm_mma.cl at commit 195f3f6 or a
generated kernel's source; CL_PROBE_OUT=FILE holds c), against float64:

    python3 bench/probes/mma_error.py M N K FILE [--model]

cl_probe fills its buffers in order from one LCG (state = state * 1664525 + 1013904223
mod 2^32 from 12345, value = (state >> 8) / 2^23 - 1, exact in float32): a first, then b.
Prints the largest and the median of |c - c64| / sum_k |a||b| over all elements, and the
bias: the mean of (c - c64) * sign(c64) / sum_k |a||b| (negative: results pulled towards
zero, as by truncating additions). --model adds the same figures for float64 GEMMs of the
rounded operands: tf32(a) tf32(b) (the TF32 mode without accumulation error), and the
three products of 3xTF32 (its operand error alone). Uses torch (float64 on the GPU) where
it is there, else numpy."""
import sys

import numpy as np

try:
    import torch
except ImportError:
    torch = None

A_LCG, C_LCG, SEED = 1664525, 1013904223, 12345


def lcg_values(count, state=SEED):
    """The first `count` values cl_probe draws, as float32, and the state after them."""
    block = 1 << 16
    # x_i = a^i x_0 + c (a^(i-1) + ... + 1) mod 2^32, i = 1..block (uint32 arithmetic wraps)
    powers = np.cumprod(np.full(block, A_LCG, dtype=np.uint32), dtype=np.uint32)  # a^1..a^block
    geo = np.cumsum(np.concatenate(([np.uint32(1)], powers[:-1])), dtype=np.uint32)  # 1+..+a^(i-1)
    incr = (geo * np.uint32(C_LCG)).astype(np.uint32)
    out = np.empty(count, dtype=np.float32)
    s = np.uint32(state)
    for start in range(0, count, block):
        n = min(block, count - start)
        states = (powers[:n] * s + incr[:n]).astype(np.uint32)
        out[start:start + n] = (states >> np.uint32(8)).astype(np.float64) / 8388608.0 - 1.0
        s = states[n - 1]
    return out, int(s)


def lcg_reference(count, state=SEED):
    """The same, one step at a time (for the self-test)."""
    out = []
    for _ in range(count):
        state = (state * A_LCG + C_LCG) & 0xFFFFFFFF
        out.append((state >> 8) / 8388608.0 - 1.0)
    return out


def tf32(x):
    """cvt.rna.tf32.f32 on float32 values: round the low 13 bits, ties away from zero."""
    u = x.view(np.uint32)
    return ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def stats(c, ref, scale):
    """max, median and bias of the error ratio, as Python floats."""
    err = (c - ref) / scale
    biased = err * (torch.sign(ref) if torch is not None and isinstance(ref, torch.Tensor) else np.sign(ref))
    if torch is not None and isinstance(err, torch.Tensor):
        flat = err.abs().flatten()
        return flat.max().item(), flat.median().item(), biased.mean().item()
    flat = np.abs(err).ravel()
    return float(flat.max()), float(np.median(flat)), float(biased.mean())


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    m, n, k, path = int(argv[1]), int(argv[2]), int(argv[3]), argv[4]
    model = "--model" in argv[5:]
    vals, _ = lcg_values(m * k + k * n)
    a32, b32 = vals[:m * k].reshape(m, k), vals[m * k:].reshape(k, n)
    c32 = np.fromfile(path, dtype="<f4")
    if c32.size != m * n:
        print(f"mma_error: {path} holds {c32.size} floats, not {m} x {n}", file=sys.stderr)
        return 1
    c32 = c32.reshape(m, n)
    if torch is not None:
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        as64 = lambda x: torch.from_numpy(np.ascontiguousarray(x)).to(dev, torch.float64)
        mm = lambda x, y: x @ y
    else:
        as64 = lambda x: np.asarray(x, dtype=np.float64)
        mm = np.matmul
    a, b = as64(a32), as64(b32)
    ref = mm(a, b)
    scale = mm(abs(a), abs(b))
    mx, med, bias = stats(as64(c32), ref, scale)
    print(f"max {mx:.3e} median {med:.3e} bias {bias:+.3e}")
    if model:
        ahi, bhi = tf32(a32), tf32(b32)
        alo, blo = tf32(a32 - ahi), tf32(b32 - bhi)
        ahi64, bhi64, alo64, blo64 = as64(ahi), as64(bhi), as64(alo), as64(blo)
        mx, med, bias = stats(mm(ahi64, bhi64), ref, scale)
        print(f"model tf32 operands, exact sums: max {mx:.3e} median {med:.3e} bias {bias:+.3e}")
        x3 = mm(alo64, bhi64) + mm(ahi64, blo64) + mm(ahi64, bhi64)
        mx, med, bias = stats(x3, ref, scale)
        print(f"model 3xtf32 operands, exact sums: max {mx:.3e} median {med:.3e} bias {bias:+.3e}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        fast, state = lcg_values(200003, 777)
        slow = lcg_reference(200003, 777)
        assert np.array_equal(fast, np.array(slow, dtype=np.float32)), "LCG mismatch"
        assert np.array_equal(fast.astype(np.float64), np.array(slow)), "values not exact in float32"
        x = np.array([1.0, 1 + 2**-11, 1 + 2**-12, 1 + 3 * 2**-12, -(1 + 2**-11), 1 + 2**-11 - 2**-23],
                     dtype=np.float32)
        assert list(tf32(x)) == [1.0, 1 + 2**-10, 1.0, 1 + 2**-10, -(1 + 2**-10), 1.0], tf32(x)
        print("self-test passed")
        sys.exit(0)
    sys.exit(main(sys.argv))
