#!/usr/bin/env bash
# Split-K with the 4096^3 GEMM's tile (128 x 128, 8 x 8 a work-item, cp.async ring) on
# each part, beside the table's matmul_long_k schedule (issue 34), after bench/gpu.sh:
#   bash bench/gpu.sh bash bench/async/long_k/job.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
S=M=512,N=512,K=262144
grep -E "^matmul_long_k " bench/sizes_gpu.txt > /tmp/lk_sizes.txt
python3 bench/torch_peer.py /tmp/lk_sizes.txt /tmp/torch_lk.json --device cuda --no-compile 2>&1 | tail -1
./build/ksmith time examples/matmul_long_k.ks --size $S --rounds 3 --schedule bench/tuned/h100-opencl/matmul_long_k.sched \
  $(for f in bench/async/long_k/*.sched; do echo --schedule $f; done) 2>&1 | tail -6
for f in bench/async/long_k/probe16384.sched bench/async/long_k/probe8192.sched; do
  ./build/ksmith run examples/matmul_long_k.ks --schedule $f --size $S --batches 5 2>&1 | grep -E "check|versus|time |error"
done
python3 bench/torch_peer.py /tmp/lk_sizes.txt /tmp/torch_lk.json --device cuda --no-compile 2>&1 | tail -1
