#!/usr/bin/env bash
# Attention in one kernel (`rewrite online_attention y`, issue 34) on the H100, after
# bench/gpu.sh's build:
#   bash bench/gpu.sh bash bench/gpu_online_attention_job.sh [SCHEDULE...]
# PyTorch eager (TF32 off) at bench/sizes_gpu.txt's attention sizes, before and after;
# `ksmith time` of the table's schedule (two passes over stored scores) beside the
# one-kernel schedules of bench/attention/online/ (or those named), three rounds; the
# first of those checked against the naive kernel at the timed sizes.
set -uo pipefail
cd "$(dirname "$0")/.."
S=B=16,H=16,T=1024,D=64
grep -E "^attention " bench/sizes_gpu.txt > /tmp/att_sizes.txt
python3 bench/torch_peer.py /tmp/att_sizes.txt /tmp/torch_att.json --device cuda --no-compile 2>&1 | tail -1
schedules=("$@")
[ ${#schedules[@]} -gt 0 ] || schedules=(bench/attention/online/*.sched)
args=()
for s in "${schedules[@]}"; do args+=(--schedule "$s"); done
./build/ksmith time examples/attention.ks --size $S --rounds 3 --schedule bench/tuned/h100-opencl/attention.sched \
  "${args[@]}" 2>&1 | tail -$((${#schedules[@]} + 2))
./build/ksmith run examples/attention.ks --schedule "${schedules[0]}" --size $S --batches 5 2>&1 |
  grep -E "check|versus|time |naive|error"
python3 bench/torch_peer.py /tmp/att_sizes.txt /tmp/torch_att.json --device cuda --no-compile 2>&1 | tail -1
