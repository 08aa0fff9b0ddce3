#!/usr/bin/env bash
# The tensor-core fp32 GEMM probe (issue 46, bench/results.md "Matrix units: 3xTF32"):
# bench/probe_gemm_mma.cl in its modes (FFMA, TF32, X3, X3SPLIT, X3KSPLIT, X3K) timed
# by bench/cl_probe.cpp at 4096^3 beside cuBLAS fp32 and TF32, and each mode's error
# against float64 (bench/mma_error.py) at 1024 x 1024 x 4096 and x 16384. No
# kernelsmith build needed:  bash bench/gpu_mma_probe.sh   (through the device tool)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/cl_probe_setup.sh
python3 - <<'PY'
import torch
a = torch.randn(4096, 4096, device='cuda'); b = torch.randn(4096, 4096, device='cuda')
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    for _ in range(3): a @ b
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(25):
        s.record(); a @ b; e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ms = sorted(ts)[12]
    print(f"cuBLAS {'TF32' if tf32 else 'fp32'} 4096^3: {ms:.3f} ms {2 * 4096**3 / ms / 1e9:.1f} TFLOP/s")
PY
run() {  # MODE M N K [extra -D]
  local mode=$1 m=$2 n=$3 k=$4
  shift 4
  CL_PROBE_OUT=/tmp/mma_out.bin /tmp/cl_probe bench/probe_gemm_mma.cl gemm $((n / 128 * 256)),$((m / 128)),1 256,1,1 \
    $((m * k)) $((k * n)) $((m * n)) -D MODE=$mode -D M=$m -D N=$n -D K=$k "$@" 2>&1
}
for mode in FFMA TF32 X3 X3SPLIT X3KSPLIT X3K; do
  r=$(run $mode 4096 4096 4096)
  ms=$(echo "$r" | sed -n 's/.*: \([0-9.]*\) ms.*/\1/p')
  if [ -n "$ms" ]; then
    echo "$mode 4096^3: $ms ms $(python3 -c "print(f'{2*4096**3/$ms/1e9:.1f}')") TFLOP/s"
  else
    echo "$mode 4096^3: $r"
  fi
  for k in 4096 16384; do
    r=$(run $mode 1024 1024 $k)
    echo "$mode 1024x1024x$k: $(python3 bench/mma_error.py 1024 1024 $k /tmp/mma_out.bin 2>&1 | tr '\n' ' ')"
  done
done
r=$(run X3K 1024 1024 4096 -D KCHUNK=8); echo "X3K KCHUNK=8 1024x1024x4096: $(python3 bench/mma_error.py 1024 1024 4096 /tmp/mma_out.bin 2>&1 | tr '\n' ' ')"
python3 bench/mma_error.py 1024 1024 4096 /tmp/mma_out.bin --model 2>&1 | tail -4
CL_PROBE_LOG=1 /tmp/cl_probe bench/probe_gemm_mma.cl gemm 8192,32,1 256,1,1 $((4096 * 4096)) $((4096 * 4096)) \
  $((4096 * 4096)) -D MODE=X3SPLIT -D M=4096 -D N=4096 -D K=4096 -O -cl-nv-verbose 2>&1 | grep -iE "registers|spill" | head -3
