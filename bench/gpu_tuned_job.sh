#!/usr/bin/env bash
# One device-tool call (after bench/gpu.sh has built): the table of bench/results.md's
# "searched schedules beside PyTorch eager": PyTorch eager timed first, then the suite
# with the tuned schedules of bench/tuned/h100-opencl (no search), then the
# evaluator's adversarial check (bench/trust.sh). Results in $OUT/tuned-bench.txt and
# $OUT/trust.txt.
#   bash bench/gpu.sh bash bench/gpu_tuned_job.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
python3 bench/torch_peer.py bench/sizes_gpu.txt /tmp/torch.json --device cuda --no-compile 2>&1 | tail -3
./build/ksmith bench examples --sizes bench/sizes_gpu.txt --peer /tmp/torch.json --target opencl \
  --tuned bench/tuned/h100-opencl 2>&1 | tee "$out/tuned-bench.txt"
bash bench/trust.sh 2>&1 | tee "$out/trust.txt"
