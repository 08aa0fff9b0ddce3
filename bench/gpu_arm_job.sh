#!/usr/bin/env bash
# One arm of a search comparison on the H100 (after bench/gpu.sh has built):
# bench/run_arm.sh at the GPU sizes with bench/evolve_gpu.toml; the runs come back as
# $OUT/arm-PART.tar.gz (NAME-ARM-sSEED/evolve.db and the best of each), to compare
# (bench/compare_search.py) or to become the cost model's prior (ksmith export --cost-rows).
#   bash bench/gpu.sh bash bench/gpu_arm_job.sh PART ARM SEED BUDGET MINUTES NAME...
set -uo pipefail
cd "$(dirname "$0")/.."
part=$1
shift
out=${OUT:-/tmp/ks_out}
runs=/tmp/ks_arms
KS_EVOLVE_FLAGS="--config bench/evolve_gpu.toml" bash bench/run_arm.sh bench/sizes_gpu.txt "$runs" "$@" 2>&1 |
  tee "$out/arm-$part.txt"
rm -rf "$runs"/*/bodies
tar czf "$out/arm-$part.tar.gz" -C "$runs" .
