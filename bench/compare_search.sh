#!/usr/bin/env bash
# One search against another: ksmith evolve on every example (a sizes file's sizes)
# in each of two arms, the same budget, seed and device, one after the other; then
# bench/compare_search.py's table and curves. The arms:
#   model    the mutator, its proposals ranked by the cost model (the default search)
#   mutator  the mutator, each proposal sent (--cost-model none)
#   random   random search, each proposal sent: the baseline of every claim
#   bash bench/compare_search.sh SIZES OUT BUDGET CHALLENGER BASELINE [ksmith evolve options...]
# e.g. bash bench/compare_search.sh bench/sizes_cpu.txt /tmp/ks_compare 30 mutator random --target opencl
# KSMITH names the ksmith to run (a copy, so that a rebuild does not change it mid-run).
set -uo pipefail
cd "$(dirname "$0")/.."
sizes=$1 out=$2 budget=$3 challenger=$4 baseline=$5
shift 5
source bench/arms.sh
arm_flags "$challenger" > /dev/null && arm_flags "$baseline" > /dev/null || exit 2
mkdir -p "$out"
while read -r name assignments; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  for arm in "$challenger" "$baseline"; do
    dir="$out/$name-$arm"
    [[ -f "$dir/done" ]] && continue  # a run split over calls keeps what is finished
    rm -rf "$dir"
    echo "== $name $arm"
    # shellcheck disable=SC2046
    "${KSMITH:-./build/ksmith}" evolve "examples/$name.ks" --size "$assignments" $(arm_flags "$arm") --budget "$budget" \
      --seed 1 --out "$dir" "$@" 2>&1 | grep -v "evaluated (" | tail -3
    touch "$dir/done"
  done
done < "$sizes"
python3 bench/compare_search.py "$out" "$challenger" "$baseline" > "$out/compare.md"
cat "$out/compare.md"
