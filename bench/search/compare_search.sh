#!/usr/bin/env bash
# One search against another: ksmith evolve on every example (a sizes file's sizes)
# in each of two arms (bench/search/arms.sh: model, mutator, random), the same budget, seed
# and device, one arm after the other (bench/search/run_arm.sh, runs in OUT/NAME-ARM-s1);
# then bench/search/compare_search.py's table and curves.
#   bash bench/search/compare_search.sh SIZES OUT BUDGET CHALLENGER BASELINE [ksmith evolve options...]
# e.g. bash bench/search/compare_search.sh bench/sizes_cpu.txt /tmp/ks_compare 30 mutator random --target opencl
# KSMITH names the ksmith to run (a copy, so that a rebuild does not change it mid-run).
set -uo pipefail
cd "$(dirname "$0")/../.."
sizes=$1 out=$2 budget=$3 challenger=$4 baseline=$5
shift 5
source bench/search/arms.sh
arm_flags "$challenger" > /dev/null && arm_flags "$baseline" > /dev/null || exit 2
for arm in "$challenger" "$baseline"; do
  KS_EVOLVE_FLAGS="$*" bash bench/search/run_arm.sh "$sizes" "$out" "$arm" 1 "$budget" 0
done
python3 bench/search/compare_search.py "$out" "$challenger" "$baseline" > "$out/compare.md"
cat "$out/compare.md"
