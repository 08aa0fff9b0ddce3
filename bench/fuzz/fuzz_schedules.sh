#!/usr/bin/env bash
# A schedule-fuzzing campaign (evolve/fuzz/README.md): the tuned schedules of every
# table in bench/tuned/ at sizes that cross their boundaries, then random schedules of
# every example and of random specs, each checked against the interpreter at such
# sizes, on every device given, for MINUTES. Findings are minimised into
# OUT/findings/ (each with repro.sh); OUT/summary.md is the figure results.md quotes.
#   bash bench/fuzz/fuzz_schedules.sh OUT MINUTES [SEED] [ksmith fuzz options...]
# KS_FUZZ_TUNED=0 leaves the tuned tables out (random schedules only).
# e.g. bash bench/fuzz/fuzz_schedules.sh /tmp/fuzz 60 1 --devices opencl:0,vulkan:0
#      bash bench/gpu.sh bash bench/fuzz/fuzz_schedules.sh /tmp/ks_out/fuzz 40 2 --workers 14   (the GPU machine)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1 minutes=$2 seed=${3:-1}
shift $(($# < 3 ? $# : 3))
tuned=()
if [ "${KS_FUZZ_TUNED:-1}" != 0 ]; then
  for table in bench/tuned/*/; do tuned+=(--tuned "$table"); done
fi
status=0
./build/ksmith fuzz examples "${tuned[@]}" --random-specs 1000000 --seed "$seed" --minutes "$minutes" \
  --out "$out" "$@" || status=$?
cat "$out/summary.md"
exit $status  # 1: findings
