#!/usr/bin/env bash
# Issue 46's search on the matrix units (after bench/gpu.sh's build): PyTorch eager
# timed on the contraction examples, then ksmith evolve on each from its naive kernel
# (the sketches draw mma.sync warp tiles on this device; fp32 = 3xTF32), then the
# examples' table with the schedules found beside eager.
#   bash bench/gpu.sh bash bench/gpu_mma_search_job.sh BUDGET MINUTES NAME...
# Output in $OUT/mma-search.txt; the schedules in $OUT/mma-tuned.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
budget=$1 minutes=$2
shift 2
sizes=/tmp/ks_mma_sizes.txt
grep -E "^($(IFS='|'; echo "$*"))[[:space:]]" bench/sizes_gpu.txt > "$sizes"
{
  timeout 150 python3 bench/torch_peer.py "$sizes" /tmp/torch.json --device cuda --no-compile 2>&1 | tail -3
  mkdir -p /tmp/ks_mma_tuned
  bash bench/evolve_gpu.sh "$sizes" /tmp/ks_mma_tuned "$budget" "$minutes" "$@"
  mkdir -p /tmp/ks_mma_examples
  for name in "$@"; do cp "examples/$name.ks" /tmp/ks_mma_examples/; done
  timeout 200 ./build/ksmith bench /tmp/ks_mma_examples --sizes "$sizes" --peer /tmp/torch.json --target opencl \
    --tuned /tmp/ks_mma_tuned 2>&1
} 2>&1 | tee "$out/mma-search.txt"
tar czf "$out/mma-tuned.tar.gz" -C /tmp ks_mma_tuned
