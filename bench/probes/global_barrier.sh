#!/bin/bash
# Which cure for NVIDIA's OpenCL compiler reading a buffer before the global barrier
# that should order it (bench/results.md, "A compiler bug the evaluator caught"):
# the buffer `volatile` (what codegen/opencl_c.cpp does) or an empty asm that clobbers
# memory after the barrier, and what each costs. For two fused kernels, as ksmith
# generates them (v0: the buffer volatile), with volatile dropped (v1: the bug, if it
# shows) and with volatile dropped and the clobber after the barrier (v2): each
# kernel's median time and its output's checksum by cl_probe, which must agree with
# v0's. cross_entropy's total with its row maximum at N = 32768, C = 4096 (the bug's
# kernel); attention's scores with the logsumexp's parts after each tile at B = 16,
# H = 16, T = 1024, D = 64 (the lse form's scores kernel beside it). On the GPU machine:
#   bash bench/gpu.sh bash bench/probes/global_barrier.sh      (ksmith built; $OUT/global_barrier.txt)
# KS_PROBE_SMALL=1 runs it at small sizes on the first OpenCL device (a dry run: the
# attention kernels, inline PTX, build on NVIDIA's OpenCL alone).
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}/global_barrier.txt
ks=./build/ksmith
if [[ -n ${KS_PROBE_SMALL:-} ]]; then
  N=64 C=96 B=1 H=1 T=128 D=64
  g++ -O2 -o /tmp/cl_probe bench/probes/cl_probe.cpp -lOpenCL || exit 1
else
  N=32768 C=4096 B=16 H=16 T=1024 D=64
  source bench/probes/cl_probe_setup.sh || exit 1
fi
mkdir -p "$(dirname "$out")" && : > "$out"
variants() {  # SOURCE -> SOURCE_v0/v1/v2.cl
  cp "$1" "${1%.cl}_v0.cl"
  sed 's/__global volatile/__global/' "$1" > "${1%.cl}_v1.cl"
  sed -e 's/__global volatile/__global/' \
    -e 's/barrier(CLK_GLOBAL_MEM_FENCE);/barrier(CLK_GLOBAL_MEM_FENCE); __asm__ volatile("" ::: "memory");/' \
    "$1" > "${1%.cl}_v2.cl"
}
probe() {  # LABEL FILE KERNEL GLOBAL LOCAL FLOATS...
  local label=$1
  shift
  echo "== $label: $(timeout 120 /tmp/cl_probe "$@" 2>&1 | tail -2 | tr '\n' ' ')" >> "$out"
}
$ks compile examples/cross_entropy.ks --schedule bench/probes/global_barrier_ce.sched --size N=$N,C=$C \
  --emit opencl --async-copies -o /tmp/gb_ce.cl || exit 1
variants /tmp/gb_ce.cl
for v in v0 v1 v2; do
  for round in 1 2 3; do probe "cross_entropy total $v ($round)" /tmp/gb_ce_$v.cl total $((N * 256)),1,1 256,1,1 $((N * C)) $N $N; done
done
fused=bench/mma/attention/attention_fused_lse_s128x64_y64x64.sched
$ks compile examples/attention.ks --schedule $fused --size B=$B,H=$H,T=$T,D=$D --emit opencl --async-copies \
  --matrix-units ptx -o /tmp/gb_at.cl || exit 1
variants /tmp/gb_at.cl
$ks compile examples/attention.ks --schedule bench/mma/attention/attention_lse_s128x64_y64x64.sched \
  --size B=$B,H=$H,T=$T,D=$D --emit opencl --async-copies --matrix-units ptx -o /tmp/gb_lse.cl || exit 1
qk=$((B * H * T * D)) scores=$((B * H * T * T))
groups=$(((T + 63) / 64 * 32)),$(((T + 127) / 128 * 4)),$((B * H))
for v in v0 v2; do probe "attention fused scores+parts $v" /tmp/gb_at_$v.cl lse_rf $groups 32,4,1 $qk $qk $scores $((B * H * T * ((T + 63) / 64))); done
probe "attention lse form's scores alone" /tmp/gb_lse.cl s $groups 32,4,1 $qk $qk $scores
cat "$out"
