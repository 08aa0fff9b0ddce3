#!/usr/bin/env bash
# KernelBench's metrics for the examples as a suite, on each target, against PyTorch
# (eager and torch.compile) run first in the same session; then the run-to-run
# spread of a few problems, warm and with cold caches.
#
# Usage: bench/suite.sh SIZES_FILE OUT_DIR [TORCH_DEVICE]
#   KS_TARGETS  the targets (default "opencl"; "opencl spirv" for both APIs)
#   KS_DEVICE   ksmith's --device (default: the target's first GPU, else its first device)
#   KS_STABLE   the problems timed in three separate processes (default: softmax
#               layer_norm matmul conv2d)
#   KS_BENCH    0: only the run-to-run spread, not the suite
#   PYTHON      the interpreter that has PyTorch (default python3)
# A torch.json already in OUT_DIR is kept, so that a run split over several calls of
# the device tool (ten minutes each) compares every target with one peer run.
# Needs build/ksmith. Writes OUT_DIR/torch.json, OUT_DIR/bench_TARGET.txt and
# OUT_DIR/stability_TARGET.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
sizes=$1 out=$2 torch_device=${3:-}
mkdir -p "$out"
# The peer once, before anything else runs on the device; both targets read its times.
[ -f "$out/torch.json" ] ||
  "${PYTHON:-python3}" bench/torch_peer.py "$sizes" "$out/torch.json" ${torch_device:+--device "$torch_device"} \
    > "$out/torch.log" 2>&1 || echo "peer failed: $(tail -1 "$out/torch.log")"
for target in ${KS_TARGETS:-opencl}; do
  [ "${KS_BENCH:-1}" = 0 ] || ./build/ksmith bench examples --sizes "$sizes" --peer "$out/torch.json" --target "$target" \
    ${KS_DEVICE:+--device "$KS_DEVICE"} | tee "$out/bench_$target.txt"
  # Run to run: each problem in three processes (warm caches), then once cold.
  {
    printf '%-14s %-28s %10s %10s %10s %8s %10s %8s\n' problem sizes run1_ms run2_ms run3_ms apart cold_ms spread
    for name in ${KS_STABLE:-softmax layer_norm matmul conv2d}; do
      size=$(awk -v n="$name" '$1 == n {print $2}' "$sizes")
      sched=(); [ -f "examples/$name.sched" ] && sched=(--schedule "examples/$name.sched")
      args=("examples/$name.ks" --target "$target" ${size:+--size "$size"} "${sched[@]}" ${KS_DEVICE:+--device "$KS_DEVICE"} --json)
      ms=()
      for _ in 1 2 3; do
        ms+=("$(./build/ksmith run "${args[@]}" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["time"]["median_ms"])')")
      done
      cold=$(./build/ksmith run "${args[@]}" --cold-cache 2>/dev/null |
        python3 -c 'import json,sys; t=json.load(sys.stdin)["time"]; print(t["median_ms"], "%.2f%%" % (100 * t["cv"]))')
      apart=$(python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; print('%.2f%%' % (100 * (max(v) - min(v)) / sorted(v)[1]))" "${ms[@]}")
      printf '%-14s %-28s %10.4f %10.4f %10.4f %8s %10.4f %8s\n' "$name" "$size" "${ms[@]}" "$apart" $cold
    done
  } 2>&1 | tee -a "$out/stability_$target.txt"
done
