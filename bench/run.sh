#!/usr/bin/env bash
# Benchmarks the naive kernels of every example and PyTorch eager, in one run on one
# machine, and writes a results table.
#
# Usage: bench/run.sh SIZES_FILE OUT_DIR [DEVICE_SELECTOR] [TORCH_DEVICE]
#   SIZES_FILE      bench/sizes_gpu.txt or bench/sizes_cpu.txt
#   DEVICE_SELECTOR passed to ksmith --device ("" = default device)
#   TORCH_DEVICE    cuda or cpu (default: cuda when PyTorch sees one)
# Examples with a hand-written schedule (examples/NAME.sched) are timed both ways.
# Needs build/ksmith; PYTHON names the interpreter that has PyTorch (default python3). Writes OUT_DIR/ksmith_NAME.json, OUT_DIR/torch.json and
# OUT_DIR/results.md.
set -uo pipefail
cd "$(dirname "$0")/.."
sizes_file=$1 out=$2 device=${3:-} torch_device=${4:-}
mkdir -p "$out"
grep -v '^\s*#' "$sizes_file" | while read -r name sizes; do
  [ -z "$name" ] && continue
  echo "== $name $sizes"
  ./build/ksmith run "examples/$name.ks" --size "$sizes" ${device:+--device "$device"} --json \
    > "$out/ksmith_$name.json" 2> "$out/ksmith_$name.err"
  echo "   exit $? $(head -c 300 "$out/ksmith_$name.err")"
  if [ -f "examples/$name.sched" ]; then  # the hand-written schedule, when there is one
    ./build/ksmith run "examples/$name.ks" --schedule "examples/$name.sched" --size "$sizes" \
      ${device:+--device "$device"} --json > "$out/ksmith_${name}_scheduled.json" 2> "$out/ksmith_${name}_scheduled.err"
    echo "   scheduled: exit $? $(head -c 300 "$out/ksmith_${name}_scheduled.err")"
  fi
done
peer_args=()
[ -n "$torch_device" ] && peer_args=(--device "$torch_device")
"${PYTHON:-python3}" bench/torch_peer.py "$sizes_file" "$out/torch.json" "${peer_args[@]}" || echo "peer failed"
python3 bench/report.py "$sizes_file" "$out" | tee "$out/results.md"
