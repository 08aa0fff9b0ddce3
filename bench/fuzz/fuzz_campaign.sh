#!/usr/bin/env bash
# A fuzz campaign: each target of tests/fuzz run for a number of executions, split
# over WORKERS processes that share one corpus (each its own random seed), on top
# of the seed corpus and the regression inputs. Prints a table (executions,
# coverage reached, new corpus inputs, crashes) and leaves OUT/summary.md, the
# crashing inputs in OUT/artifacts (to fix, then keep in tests/fuzz/regressions)
# and the grown corpora in OUT/corpus.
#   bash bench/fuzz/fuzz_campaign.sh BIN_DIR EXECUTIONS WORKERS OUT [TARGET...]
# BIN_DIR holds the fuzz_* executables (build-fuzz/tests/fuzz, or a copy brought to
# a machine with more cores: bench/fuzz/fuzz_pack.sh). KS_FUZZ_SECONDS=S stops each
# target after S seconds (a device call's time limit); the table says how many
# executions it reached.
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "$1") executions=$2 workers=$3 out=$4
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # libraries packed beside the targets
shift 4
targets=("$@")
((${#targets[@]})) || targets=(spec schedule ir config answer body sizes)
mkdir -p "$out/artifacts" "$out/logs"
[[ -d $out/seeds ]] || bash tests/fuzz/seeds.sh "$out/seeds" > /dev/null
per=$(((executions + workers - 1) / workers))
{
  echo "| target | executions | seconds | executions/s | coverage (edges) | features | corpus | crashes |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$out/summary.md"
for target in "${targets[@]}"; do
  mkdir -p "$out/corpus/$target"
  start=$(date +%s)
  for ((w = 0; w < workers; w++)); do
    "$bin/fuzz_$target" "$out/corpus/$target" "$out/seeds/$target" -dict=tests/fuzz/dict/$target.dict \
      -runs="$per" ${KS_FUZZ_SECONDS:+-max_total_time=$KS_FUZZ_SECONDS} -seed=$((w + 1 + ${KS_FUZZ_SEED:-0})) -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
      -artifact_prefix="$out/artifacts/$target-" > "$out/logs/$target-$w.log" 2>&1 &
  done
  wait
  seconds=$(($(date +%s) - start))
  done_runs=$(cat "$out"/logs/$target-*.log | awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}')
  cov=$(cat "$out"/logs/$target-*.log | grep -oE 'cov: [0-9]+' | awk '{if ($2 > m) m = $2} END {print m + 0}')
  ft=$(cat "$out"/logs/$target-*.log | grep -oE 'ft: [0-9]+' | awk '{if ($2 > m) m = $2} END {print m + 0}')
  crashes=$(ls "$out/artifacts/" | grep -c "^$target-")
  corpus=$(ls "$out/corpus/$target" | wc -l)
  echo "| $target | $done_runs | $seconds | $((done_runs / (seconds > 0 ? seconds : 1))) | $cov | $ft | $corpus | $crashes |" \
    | tee -a "$out/summary.md"
done
