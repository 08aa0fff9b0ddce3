#!/usr/bin/env bash
# The evaluator against the adversarial bodies of tests/adversarial/ on one OpenCL
# device (a GPU's, through bench/gpu.sh): each cheat must be caught with its verdict,
# the honest bodies must pass. Prints a line per body; exits 1 if any goes the wrong way.
#   bash bench/trust.sh [DEVICE]      (default: the first OpenCL GPU, else PoCL)
set -uo pipefail
cd "$(dirname "$0")/.."
device=${1:-}
ksmith=${KSMITH:-./build/ksmith}
status=0
body=$(mktemp --suffix=.cl)
trap 'rm -f "$body"' EXIT
verdict() {  # SPEC SIZES BODY MACRO [SCHEDULE]: the body with its CHEAT_ macro defined
  { [[ -n "$4" ]] && echo "#define $4"; cat "tests/adversarial/$3"; } > "$body"
  local args=(run "$1" --target opencl --size "$2" --kernel "$body" --json)
  [[ -n "$device" ]] && args+=(--device "$device")
  [[ -n "${5:-}" ]] && args+=(--schedule "$5")
  local record
  record=$("$ksmith" "${args[@]}" 2>/dev/null)  # exit 1 for a flagged or incorrect record
  python3 -c 'import json, sys; print(json.loads(sys.argv[1])["verdict"])' "$record" 2>/dev/null || echo "no record"
}
expect() {  # WANT BODY MACRO SPEC SIZES [SCHEDULE]
  local got
  got=$(verdict "$4" "$5" "$2" "$3" "${6:-}")
  if [[ "$got" == "$1"* ]]; then echo "ok    $2 ${3:-(honest)}: $got"; else
    echo "WRONG $2 ${3:-(honest)}: $got (wanted: $1...)"
    status=1
  fi
}
softmax=examples/softmax.ks
expect "correct" softmax.cl "" $softmax N=8,D=65536
expect "flagged: it writes outside its output y, 5 elements past the end" softmax.cl CHEAT_OUT_OF_BOUNDS $softmax N=8,D=1024
expect "flagged: it keeps a previous answer" softmax.cl CHEAT_FIRST_RUN_ONLY $softmax N=8,D=1024
expect "flagged: it keeps a previous answer" softmax.cl CHEAT_EARLY_RETURN $softmax N=8,D=1024
expect "flagged: it reads its intermediate row_max before writing it" softmax.cl CHEAT_READ_BEFORE_WRITE $softmax N=8,D=1024
expect "flagged: it reuses its intermediate total from an earlier run" softmax.cl CHEAT_STALE_TOTAL $softmax N=8,D=1024
expect "flagged: it does less work when its outputs and intermediates hold" softmax.cl CHEAT_REUSE_INTERMEDIATE $softmax N=8,D=65536
sum=tests/adversarial/sum_all.ks
expect "correct" sum_all_tree.cl "" $sum N=1048576 tests/adversarial/sum_all.sched
expect "disagrees with the naive kernel at N=1048576" sum_all_tree.cl CHEAT_DROP_ONE $sum N=1048576 tests/adversarial/sum_all.sched
exit $status
