#!/usr/bin/env bash
# CI's fuzz smoke run: every target replays its regression inputs (each once), then
# fuzzes for SECONDS (default 5) on top of the seed corpus; any crash, sanitizer
# report, time-out (10 s an input) or memory over 2 GiB fails the run, and the input
# that did it is left in OUT/ARTIFACTS (default /tmp/ks_fuzz) to add to regressions/.
# Targets run KS_JOBS at a time (default 2: each fuzzes on one core).
#   bash tests/fuzz/smoke.sh BUILD_FUZZ_DIR [SECONDS] [OUT]
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$1/tests/fuzz seconds=${2:-5} out=${3:-/tmp/ks_fuzz} lanes=${KS_JOBS:-2}
bash tests/fuzz/seeds.sh "$out/seeds" > /dev/null
mkdir -p "$out/artifacts"

# One target: its verdict on the first line of "$out/$target.verdict" (ok or FAIL).
smoke() {
  local target=$1 exe=$bin/fuzz_$1
  if [[ ! -x $exe ]]; then echo "FAIL $target: $exe not built"; return; fi
  local regressions=(tests/fuzz/regressions/$target/*)
  if [[ -e ${regressions[0]} ]] && ! "$exe" "${regressions[@]}" > "$out/$target-regressions.log" 2>&1; then
    echo "FAIL $target: a regression input crashes again ($out/$target-regressions.log)"
    tail -30 "$out/$target-regressions.log"
    return
  fi
  rm -rf "$out/corpus/$target" && mkdir -p "$out/corpus/$target"
  if "$exe" "$out/corpus/$target" "$out/seeds/$target" -dict=tests/fuzz/dict/$target.dict \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
      -artifact_prefix="$out/artifacts/$target-" > "$out/$target.log" 2>&1; then
    echo "ok   $target: $(grep -E '^#[0-9]+' "$out/$target.log" | tail -1 | awk '{print $1, $3, $4}' | tr -d '#') (executions, coverage)"
  else
    echo "FAIL $target: $(ls "$out/artifacts/$target-"* 2>/dev/null | head -1)"
    grep -E "kernelsmith fuzz|ERROR|runtime error|SUMMARY" "$out/$target.log" | head -5
  fi
}

targets=(spec schedule ir config answer body sizes)
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= lanes)); do wait -n; done
  smoke "$target" > "$out/$target.verdict" 2>&1 &
done
wait
failed=0
for target in "${targets[@]}"; do
  cat "$out/$target.verdict"
  [[ $(head -c 2 "$out/$target.verdict") == ok ]] || failed=1
done
exit $failed
