#!/usr/bin/env bash
# Both arms of the cost model's comparison on the H100 (after bench/gpu.sh has built),
# several runs at once: each (seed, example, arm) is one bench/run_arm.sh run with
# bench/evolve_gpu.toml, JOBS of them side by side. They share the device through its
# lock (timing stays one kernel at a time; checks and compiles overlap), so the
# comparison counts evaluations: give MINUTES enough that the budget, not the clock,
# ends a run. The arm `model` takes as its prior tuned/h100-opencl/cost_prior.jsonl
# split by problem (bench/split_prior.py), never its own problem's runs; `mutator` is
# the same search unranked. No run starts after the epoch second KS_UNTIL (so that a
# device-tool call ends inside its limit with what it has); a run finished in an
# earlier call on the same machine is kept (run_arm.sh's done file), so the next call
# goes on. Each call's runs come back as $OUT/pairs-PART.tar.gz, with the comparison
# so far in $OUT/compare-PART.md.
#   KS_UNTIL=$(($(date +%s) + 400)) bash bench/gpu.sh bash bench/gpu_pairs_job.sh PART JOBS BUDGET MINUTES "SEED..." NAME...
set -uo pipefail
cd "$(dirname "$0")/.."
part=$1 jobs=$2 budget=$3 minutes=$4 seeds=$5
shift 5
out=${OUT:-/tmp/ks_out}
mkdir -p "$out"
runs=/tmp/ks_pairs
prior=/tmp/ks_prior
python3 bench/split_prior.py bench/tuned/h100-opencl/cost_prior.jsonl "$prior" > /dev/null || exit 1
mkdir -p "$runs"
# A copy: a later call's rebuild must not change the binary under a run.
cp build/ksmith /tmp/ksmith_pairs
one() {
  local arm=$1 seed=$2 name=$3
  local log="$runs/$name-$arm-s$seed.log"
  (
    [[ $arm == model ]] && export KS_PRIOR_DIR=$prior
    KSMITH=/tmp/ksmith_pairs KS_EVOLVE_FLAGS="--config bench/evolve_gpu.toml" \
      bash bench/run_arm.sh bench/sizes_gpu.txt "$runs" "$arm" "$seed" "$budget" "$minutes" "$name" > "$log" 2>&1
  )
  echo "$(date +%T) $name $arm s$seed: $(grep -m1 "over the naive kernel" "$log" || tail -1 "$log")"
}
for seed in $seeds; do
  for name in "$@"; do
    for arm in model mutator; do
      [[ -f "$runs/$name-$arm-s$seed/done" ]] && continue
      if (($(date +%s) >= ${KS_UNTIL:-9999999999})); then
        echo "not started (KS_UNTIL): $name $arm s$seed"
        continue
      fi
      while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
      one "$arm" "$seed" "$name" &
    done
  done
done
wait
rm -rf "$runs"/*/bodies
echo "runs finished: $(ls "$runs"/*/done 2>/dev/null | wc -l)"
python3 bench/compare_search.py "$runs" model mutator > "$out/compare-$part.md" 2>&1
tail -25 "$out/compare-$part.md"
cp "$runs/search_curves.svg" "$out/curves-$part.svg" 2>/dev/null
tar czf "$out/pairs-$part.tar.gz" -C "$runs" --exclude='*.svg' .
