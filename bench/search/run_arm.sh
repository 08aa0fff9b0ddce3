#!/usr/bin/env bash
# One arm of a search comparison: ksmith evolve on the examples of a sizes file (or
# the named ones), the arm's flags (bench/search/arms.sh), a seed, a budget of evaluations
# and a time limit per example, each run in RUNS/NAME-ARM-sSEED. Extra ksmith evolve
# flags in KS_EVOLVE_FLAGS (e.g. "--config bench/evolve_gpu.toml"); with
# KS_PRIOR_DIR=DIR, each run's cost model takes as its prior the files DIR/*.jsonl
# (ksmith export --cost-rows) but the example's own, DIR/NAME-*.jsonl: what the
# model knows of the device, not of the problem (leave one out), in place of the
# configuration's cost_model.prior. KSMITH names the ksmith to run (a copy, so that a
# rebuild does not change it mid-run); KS_DTYPE=bf16 (or f16): the specs' f32 tensors at that
# type (--dtype). bench/search/compare_search.py compares two arms' runs.
#   bash bench/search/run_arm.sh SIZES RUNS ARM SEED BUDGET MINUTES [NAME...]
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/search/arms.sh
sizes=$1 runs=$2 arm=$3 seed=$4 budget=$5 minutes=$6
shift 6
flags=$(arm_flags "$arm") || exit 2
mkdir -p "$runs"
while read -r name assignments; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if (($#)) && [[ " $* " != *" $name "* ]]; then continue; fi
  dir="$runs/$name-$arm-s$seed"
  [[ -f "$dir/done" ]] && continue  # an arm split over calls keeps what is finished
  rm -rf "$dir"
  prior=()
  if [[ -n "${KS_PRIOR_DIR:-}" ]]; then
    for f in "$KS_PRIOR_DIR"/*.jsonl; do [[ "${f##*/}" == "$name"-* ]] || prior+=(--cost-prior "$f"); done
  fi
  echo "== $name $arm seed $seed ($assignments)"
  # shellcheck disable=SC2086
  "${KSMITH:-./build/ksmith}" evolve "examples/$name.ks" --size "$assignments" $flags ${KS_EVOLVE_FLAGS:-} \
    --seed "$seed" --budget "$budget" --minutes "$minutes" --out "$dir" "${prior[@]}" ${KS_DTYPE:+--dtype "$KS_DTYPE"} 2>&1 | grep -v "evaluated (" | tail -4
  touch "$dir/done"
done < "$sizes"
