#!/usr/bin/env bash
# What the evaluator's checks cost: the wall time of `ksmith run` on every example
# (its schedule where it has one) at a sizes file's sizes, for two ksmith builds, run
# alternately, REPEATS times each; prints a markdown table of medians.
#   bash bench/search/check_cost.sh BEFORE_KSMITH AFTER_KSMITH [SIZES] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/../.."
before=$1 after=$2 sizes=${3:-bench/sizes_cpu.txt} repeats=${4:-3}
seconds() {  # wall seconds of one run, or "fail"
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || { echo fail; return; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "| example | schedule | before s | after s | change |"
echo "|---|---|---|---|---|"
total_before=0 total_after=0
while read -r name assignments; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  args=(run "examples/$name.ks" --size "$assignments" --target opencl)
  sched=no
  if [[ -f "examples/$name.sched" ]]; then args+=(--schedule "examples/$name.sched"); sched=yes; fi
  b=() a=()
  for ((r = 0; r < repeats; r++)); do
    b+=("$(seconds "$before" "${args[@]}")")
    a+=("$(seconds "$after" "${args[@]}")")
  done
  mb=$(echo "${b[*]}" | median) ma=$(echo "${a[*]}" | median)
  total_before=$(echo "$total_before + $mb" | bc) total_after=$(echo "$total_after + $ma" | bc)
  printf "| %s | %s | %.2f | %.2f | %+.0f%% |\n" "$name" "$sched" "$mb" "$ma" "$(echo "($ma / $mb - 1) * 100" | bc -l)"
done < "$sizes"
printf "| all | | %.2f | %.2f | %+.0f%% |\n" "$total_before" "$total_after" \
  "$(echo "($total_after / $total_before - 1) * 100" | bc -l)"
