#!/usr/bin/env bash
# The evaluator against the adversarial bodies of tests/adversarial/ on one OpenCL
# device (a GPU's, through bench/gpu.sh): each cheat must be caught with its verdict,
# the honest bodies must pass. Prints a line per body; exits 1 if any goes the wrong way.
#   bash bench/trust.sh [DEVICE]      (default: the first OpenCL GPU, else PoCL)
# With KS_TRUST_WORKER=1 every body goes through one `ksmith worker`, as a search's
# candidates do: the timed sizes' inputs and reference kept from one to the next.
set -uo pipefail
cd "$(dirname "$0")/.."
device=${1:-}
ksmith=${KSMITH:-./build/ksmith}
status=0
body=$(mktemp --suffix=.cl)
trap 'rm -f "$body"' EXIT
py=$(command -v /usr/bin/python3 || command -v python3)
[[ -n "${KS_TRUST_WORKER:-}" ]] && coproc WORKER { "$ksmith" worker 2>/dev/null; }
verdict() {  # SPEC SIZES BODY MACRO [SCHEDULE]: the body with its CHEAT_ macro defined
  { [[ -n "$4" ]] && echo "#define $4"; cat "tests/adversarial/$3"; } > "$body"
  local args=(run "$1" --target opencl --size "$2" --kernel "$body" --json)
  [[ -n "$device" ]] && args+=(--device "$device")
  [[ -n "${5:-}" ]] && args+=(--schedule "$5")
  local record
  if [[ -n "${KS_TRUST_WORKER:-}" ]]; then
    "$py" -c 'import json, sys; print(json.dumps({"ticket": 1, "args": sys.argv[1:]}))' "${args[@]}" >&"${WORKER[1]}"
    local answer
    read -r answer <&"${WORKER[0]}"
    record=$("$py" -c 'import json, sys; print(json.loads(sys.argv[1])["out"])' "$answer" 2>/dev/null)
  else
    record=$("$ksmith" "${args[@]}" 2>/dev/null)  # exit 1 for a flagged or incorrect record
  fi
  python3 -c 'import json, sys; print(json.loads(sys.argv[1])["verdict"])' "$record" 2>/dev/null || echo "no record"
}
expect() {  # WANT BODY MACRO SPEC SIZES [SCHEDULE]; WANT is a regular expression
  local got
  got=$(verdict "$4" "$5" "$2" "$3" "${6:-}")
  local want="^($1)"  # the verdict's beginning, alternatives split by |
  if [[ "$got" =~ $want ]]; then echo "ok    $2 ${3:-(honest)}: $got"; else
    echo "WRONG $2 ${3:-(honest)}: $got (wanted: $1...)"
    status=1
  fi
}
softmax=examples/softmax.ks
expect "correct" softmax.cl "" $softmax N=8,D=65536
# An input changed at the timed sizes only (Clang's check, where the build has it,
# refuses the store first).
expect "flagged: it changes its input x at the timed sizes|does not compile at the check sizes: Clang refuses the body: .*input-written" softmax.cl CHEAT_INPUT_AT_TIMED_SIZES $softmax N=8,D=65536
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
# An f32 contraction in plain TF32 (the matrix unit's precision), or in f16, at the timed sizes.
expect "correct" matmul_tf32.cl "" examples/matmul.ks N=1024
expect "disagrees with the naive kernel at N=1024" matmul_tf32.cl CHEAT_TF32 examples/matmul.ks N=1024
expect "disagrees with the naive kernel at N=1024" matmul_tf32.cl CHEAT_F16 examples/matmul.ks N=1024
exit $status
