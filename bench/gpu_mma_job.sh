#!/usr/bin/env bash
# Issue 46's matrix units on an H100/H200, after bench/gpu.sh's build:
#   bash bench/gpu.sh bash bench/gpu_mma_job.sh [SCHEDULE...]
# (default: every bench/mma/ schedule).
# 1. Each schedule checked on the device (the check sizes, and N = 4096
#    against the float64 reference), fp32-accurate (3xTF32); 2. matmul 4096^3 side by
#    side with the table's FFMA schedule, in fp32 and in TF32; 3. cuBLAS fp32 and TF32
#    through PyTorch in the same job. Output in $OUT/mma.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
ks=./build/ksmith
tuned=bench/tuned/h100-opencl/matmul.sched
mma=("$@")
[ ${#mma[@]} -gt 0 ] || mma=(bench/mma/*.sched)
sched_args=(--schedule "$tuned")
for s in "${mma[@]}"; do sched_args+=(--schedule "$s"); done
{
  echo "== device"
  $ks devices | grep -i nvidia | head -2
  echo "== checks, fp32 (3xTF32)"
  for s in "${mma[@]}"; do
    echo "-- $s"
    timeout 120 $ks run examples/matmul.ks --schedule "$s" --size N=4096 --batches 5 2>&1 | tail -3
  done
  echo "-- $tuned (FFMA)"
  timeout 120 $ks run examples/matmul.ks --schedule "$tuned" --size N=4096 --batches 5 2>&1 | tail -3
  echo "== matmul 4096^3 side by side, fp32"
  timeout 200 $ks time examples/matmul.ks --size N=4096 --rounds 3 "${sched_args[@]}" 2>&1 | tail -8
  echo "== matmul 4096^3 side by side, tf32"
  timeout 200 $ks time examples/matmul.ks --size N=4096 --rounds 3 --precision tf32 "${sched_args[@]}" 2>&1 | tail -8
  echo "== cuBLAS (PyTorch), fp32 and tf32"
  timeout 100 python3 bench/cublas_gemm.py 2>&1 | grep 4096x4096x4096
  timeout 100 python3 bench/cublas_gemm.py --tf32 2>&1 | grep 4096x4096x4096
  echo "== generated source of the first schedule"
  $ks compile examples/matmul.ks --schedule "${mma[0]}" --size N=4096 --matrix-units ptx --async-copies -o "$out/mma.cl"
} 2>&1 | tee "$out/mma.txt"
