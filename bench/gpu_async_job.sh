#!/usr/bin/env bash
# Issue 34's async_copy on the H100, after bench/gpu.sh's build:
#   bash bench/gpu.sh bash bench/gpu_async_job.sh
# 1. The probe's GEMM tile through the compiler (bench/async/), checked on the device
#    (the check sizes, whose tails take zero-filling copies, and N = 4096 against the
#    naive kernel), then timed beside the same tile with prefetch and the table's
#    schedule; 2. the table's GEMM schedules with their prefetches replaced by a ring of
#    2 or 3 slots, side by side (ksmith time, three rounds); 3. a 72-second search of
#    matmul from the naive kernel (the sketches now draw async_copy on this device)
#    beside PyTorch eager. Output in $OUT/async.txt; the search's in reach-tuned.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
ks=./build/ksmith
ring() {  # SCHEDULE LOOP SLOTS: the schedule with its prefetch lines replaced by one async_copy
  local file=/tmp/ks_async_$(basename "$1" .sched)_$3.sched
  grep -v '^prefetch ' "$1" > "$file"
  echo "async_copy $2 $3" >> "$file"
  echo "$file"
}
{
  echo "== device"
  $ks devices | grep -i nvidia | head -2
  echo "== checks (N = 4096 and the check sizes)"
  for s in ring3 ring2; do
    $ks run examples/matmul.ks --schedule bench/async/matmul_128x128_k8_$s.sched --size N=4096 --batches 5 2>&1 | tail -3
  done
  echo "== matmul 4096^3 side by side"
  $ks time examples/matmul.ks --size N=4096 --rounds 3 --schedule bench/tuned/h100-opencl/matmul.sched \
    --schedule "$(ring bench/tuned/h100-opencl/matmul.sched c.ko 2)" \
    --schedule "$(ring bench/tuned/h100-opencl/matmul.sched c.ko 3)" \
    --schedule bench/async/matmul_128x128_k8_prefetch.sched --schedule bench/async/matmul_128x128_k8_ring2.sched \
    --schedule bench/async/matmul_128x128_k8_ring3.sched 2>&1 | tail -9
  echo "== matmul_long_k"
  $ks time examples/matmul_long_k.ks --size M=512,N=512,K=262144 --rounds 3 \
    --schedule bench/tuned/h100-opencl/matmul_long_k.sched \
    --schedule "$(ring bench/tuned/h100-opencl/matmul_long_k.sched c_rf.kio 2)" \
    --schedule "$(ring bench/tuned/h100-opencl/matmul_long_k.sched c_rf.kio 3)" 2>&1 | tail -5
  echo "== gemm_bias_leaky (x @ w.T: both panels transposed, 4-byte copies; 3 slots exceed 32 KiB)"
  $ks time examples/gemm_bias_leaky.ks --size M=1024,N=8192,K=8192 --rounds 3 \
    --schedule bench/tuned/h100-opencl/gemm_bias_leaky.sched \
    --schedule "$(ring bench/tuned/h100-opencl/gemm_bias_leaky.sched acc.ko 2)" 2>&1 | tail -4
  echo "== batched_matmul"
  $ks time examples/batched_matmul.ks --size B=128,M=128,K=256,N=512 --rounds 3 \
    --schedule bench/tuned/h100-opencl/batched_matmul.sched \
    --schedule "$(ring bench/tuned/h100-opencl/batched_matmul.sched c.ko 2)" \
    --schedule "$(ring bench/tuned/h100-opencl/batched_matmul.sched c.ko 3)" 2>&1 | tail -5
} 2>&1 | tee "$out/async.txt"
KS_REACH_ARMS=with bash bench/gpu_reach_job.sh 1.2 matmul 2>&1 | tail -12 | tee -a "$out/async.txt"
