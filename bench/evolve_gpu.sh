#!/usr/bin/env bash
# ksmith evolve on the examples, each from its naive kernel within a budget, and the
# best schedule of each kept as a tuning log (TUNED/NAME.sched, whose first line says
# the speedup, the device and the evaluations it took; TUNED/NAME.json the run's
# summary), so that `ksmith bench --tuned TUNED` reproduces the table without
# searching again. On the H100, through bench/gpu.sh:
#   bash bench/gpu.sh bash bench/evolve_gpu.sh bench/sizes_gpu.txt bench/tuned/h100-opencl 60 0.4 [NAME...]
# Here (PoCL): bash bench/evolve_gpu.sh bench/sizes_cpu.txt /tmp/tuned 20 1 softmax
# With KS_START_DIR=DIR, each search starts from DIR/NAME.sched where there is one (an
# earlier lease's best), and the new best's header says so. KS_SPEC_DIR: the specs' folder
# (default examples). KS_DTYPE=bf16 (or f16): each spec's f32 tensors at that type (--dtype).
set -uo pipefail
cd "$(dirname "$0")/.."
sizes=$1 tuned=$2 budget=$3 minutes=$4
shift 4
mkdir -p "$tuned"
while read -r name assignments; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if (($#)) && [[ " $* " != *" $name "* ]]; then continue; fi
  out=/tmp/ks_evolve/$name
  rm -rf "$out"
  echo "== $name ($assignments)"
  start=()
  [[ -n "${KS_START_DIR:-}" && -f "$KS_START_DIR/$name.sched" ]] && start=(--start "$KS_START_DIR/$name.sched")
  "${KSMITH:-./build/ksmith}" evolve "${KS_SPEC_DIR:-examples}/$name.ks" --config bench/evolve_gpu.toml --size "$assignments" \
    --budget "$budget" --minutes "$minutes" --out "$out" "${start[@]}" ${KS_DTYPE:+--dtype "$KS_DTYPE"} 2>&1 | grep -v "evaluated (" | tail -5
  "${KSMITH:-./build/ksmith}" runs "$out/evolve.db" --json > "$tuned/$name.json"
  [[ -f "$out/best.sched" ]] && cp "$out/best.sched" "$tuned/$name.sched"
done < "$sizes"
