#!/usr/bin/env bash
# Attention's schedules on the H100, after bench/gpu.sh's build (issue 34):
#   bash bench/gpu.sh bash bench/gpu_attention_job.sh
# PyTorch eager (TF32 off) at bench/sizes_gpu.txt's attention sizes, before and after;
# `ksmith time` of the 72-s search's best (bench/runs/h100-opencl-attention.tar.xz) and
# of the hand-written steps from it in bench/attention/ (each stage changed, then the
# row statistics as one logsumexp, then y's tile), three rounds; the last checked
# against the naive kernel at those sizes.
set -uo pipefail
cd "$(dirname "$0")/.."
S=B=16,H=16,T=1024,D=64
grep -E "^attention " bench/sizes_gpu.txt > /tmp/att_sizes.txt
python3 bench/torch_peer.py /tmp/att_sizes.txt /tmp/torch_att.json --device cuda --no-compile 2>&1 | tail -1
tar xJf bench/runs/h100-opencl-attention.tar.xz -C /tmp with/attention.sched
./build/ksmith time examples/attention.ks --size $S --rounds 3 --schedule /tmp/with/attention.sched \
  --schedule bench/attention/rows.sched --schedule bench/attention/gemm.sched --schedule bench/attention/both.sched \
  --schedule bench/attention/lse.sched --schedule bench/attention/lse_b.sched 2>&1 | tail -6
./build/ksmith run examples/attention.ks --schedule bench/attention/lse_b.sched --size $S --batches 5 2>&1 |
  grep -E "check|versus|time |naive|error"
python3 bench/torch_peer.py /tmp/att_sizes.txt /tmp/torch_att.json --device cuda --no-compile 2>&1 | tail -1
