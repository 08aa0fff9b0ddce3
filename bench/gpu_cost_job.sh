#!/usr/bin/env bash
# One device-tool call (after bench/gpu.sh has built): the cost model against the same
# search without it on the named examples at the GPU sizes, the same budget and seed
# (bench/compare_search.sh's arms model and mutator, bench/evolve_gpu.toml); the table
# comes back as $OUT/compare-PART.md, the run databases as $OUT/cost-PART.tar.gz.
#   bash bench/gpu.sh bash bench/gpu_cost_job.sh PART BUDGET NAME...
set -uo pipefail
cd "$(dirname "$0")/.."
part=$1 budget=$2
shift 2
out=${OUT:-/tmp/ks_out}
sizes=/tmp/ks_cost_sizes.txt
: > "$sizes"
for name in "$@"; do grep -E "^$name[[:space:]]" bench/sizes_gpu.txt >> "$sizes"; done
bash bench/compare_search.sh "$sizes" /tmp/ks_cost "$budget" model mutator --config bench/evolve_gpu.toml \
  2>&1 | tee "$out/compare-$part.txt"
cp /tmp/ks_cost/compare.md "$out/compare-$part.md"
tar czf "$out/cost-$part.tar.gz" -C /tmp ks_cost
