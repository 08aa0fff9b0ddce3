#!/usr/bin/env bash
# CI's fuzz smoke run: every target replays its regression inputs (each once), then
# fuzzes for SECONDS (default 8) on top of the seed corpus; any crash, sanitizer
# report, time-out (10 s an input) or memory over 2 GiB fails the run, and the input
# that did it is left in OUT/ARTIFACTS (default /tmp/ks_fuzz) to add to regressions/.
#   bash tests/fuzz/smoke.sh BUILD_FUZZ_DIR [SECONDS] [OUT]
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$1/tests/fuzz seconds=${2:-8} out=${3:-/tmp/ks_fuzz}
bash tests/fuzz/seeds.sh "$out/seeds" > /dev/null
failed=0
for target in spec schedule ir config answer body sizes; do
  exe=$bin/fuzz_$target
  if [[ ! -x $exe ]]; then echo "FAIL $target: $exe not built"; failed=1; continue; fi
  regressions=(tests/fuzz/regressions/$target/*)
  if [[ -e ${regressions[0]} ]] && ! "$exe" "${regressions[@]}" > "$out/$target-regressions.log" 2>&1; then
    echo "FAIL $target: a regression input crashes again ($out/$target-regressions.log)"
    tail -30 "$out/$target-regressions.log"
    failed=1
    continue
  fi
  rm -rf "$out/corpus/$target" && mkdir -p "$out/corpus/$target" "$out/artifacts"
  if "$exe" "$out/corpus/$target" "$out/seeds/$target" -dict=tests/fuzz/dict/$target.dict \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
      -artifact_prefix="$out/artifacts/$target-" > "$out/$target.log" 2>&1; then
    echo "ok   $target: $(grep -E '^#[0-9]+' "$out/$target.log" | tail -1 | awk '{print $1, $3, $4}' | tr -d '#') (executions, coverage)"
  else
    echo "FAIL $target: $(ls "$out/artifacts/$target-"* 2>/dev/null | head -1)"
    grep -E "kernelsmith fuzz|ERROR|runtime error|SUMMARY" "$out/$target.log" | head -5
    failed=1
  fi
done
exit $failed
