#!/usr/bin/env bash
# Times one spec under several schedules on one device, one line each: for tuning.
#   bench/schedules.sh SPEC SIZES SCHEDULE...      ("-" = the naive lowering)
# e.g. bench/schedules.sh examples/matmul.ks N=4096 - examples/matmul.sched
# Prints the median time, spread and rate, or the first line of the error.
set -uo pipefail
cd "$(dirname "$0")/.."
spec=$1 sizes=$2
shift 2
for schedule in "$@"; do
  args=()
  [ "$schedule" != - ] && args=(--schedule "$schedule")
  result=$(./build/ksmith run "$spec" --size "$sizes" "${args[@]}" 2>&1)
  line=$(grep -E '^  time' <<< "$result" || grep -m1 -E 'error|incorrect' <<< "$result")
  printf '%-40s %s\n' "$schedule" "$(grep -m1 -E 'check' <<< "$result" | awk '{print $3}') ${line#  time}"
done
