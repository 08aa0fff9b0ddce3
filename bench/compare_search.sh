#!/usr/bin/env bash
# The mutator against random search: ksmith evolve on every example (a sizes file's
# sizes) with each proposer, the same budget, seed and device, one after the other;
# then bench/compare_search.py's table and curves.
#   bash bench/compare_search.sh SIZES OUT BUDGET [ksmith evolve options...]
# e.g. bash bench/compare_search.sh bench/sizes_cpu.txt /tmp/ks_compare 30 --target opencl
# KSMITH names the ksmith to run (a copy, so that a rebuild does not change it mid-run).
set -uo pipefail
cd "$(dirname "$0")/.."
sizes=$1 out=$2 budget=$3
shift 3
mkdir -p "$out"
while read -r name assignments; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  for proposer in mutator random; do
    dir="$out/$name-$proposer"
    [[ -f "$dir/done" ]] && continue  # a run split over calls keeps what is finished
    rm -rf "$dir"
    echo "== $name $proposer"
    "${KSMITH:-./build/ksmith}" evolve "examples/$name.ks" --size "$assignments" --proposer "$proposer" --budget "$budget" \
      --seed 1 --out "$dir" "$@" 2>&1 | grep -v "evaluated (" | tail -3
    touch "$dir/done"
  done
done < "$sizes"
python3 bench/compare_search.py "$out" > "$out/compare.md"
cat "$out/compare.md"
