#!/usr/bin/env bash
# Benchmarks every example, naive and with its hand-written schedule, on each target,
# and PyTorch eager, in one run on one machine, and writes a results table.
#
# Usage: bench/run.sh SIZES_FILE OUT_DIR [DEVICE_SELECTOR] [TORCH_DEVICE]
#   SIZES_FILE      bench/sizes_gpu.txt or bench/sizes_cpu.txt
#   DEVICE_SELECTOR passed to ksmith --device ("" = the target's default device)
#   TORCH_DEVICE    cuda or cpu (default: cuda when PyTorch sees one)
#   KS_TARGETS      the targets, in order (default "opencl"; "opencl spirv" for both APIs)
# Needs build/ksmith; PYTHON names the interpreter that has PyTorch (default python3).
# Writes OUT_DIR/ksmith_TARGET_NAME[_scheduled].json, OUT_DIR/torch.json and
# OUT_DIR/results.md.
set -uo pipefail
cd "$(dirname "$0")/.."
sizes_file=$1 out=$2 device=${3:-} torch_device=${4:-}
mkdir -p "$out"
for target in ${KS_TARGETS:-opencl}; do
  grep -v '^\s*#' "$sizes_file" | while read -r name sizes; do
    [ -z "$name" ] && continue
    echo "== $target $name $sizes"
    base="$out/ksmith_${target}_$name"
    ./build/ksmith run "examples/$name.ks" --target "$target" --size "$sizes" ${device:+--device "$device"} --json \
      > "$base.json" 2> "$base.err"
    echo "   exit $? $(head -c 300 "$base.err")"
    if [ -f "examples/$name.sched" ]; then  # the hand-written schedule, when there is one
      ./build/ksmith run "examples/$name.ks" --target "$target" --schedule "examples/$name.sched" --size "$sizes" \
        ${device:+--device "$device"} --json > "${base}_scheduled.json" 2> "${base}_scheduled.err"
      echo "   scheduled: exit $? $(head -c 300 "${base}_scheduled.err")"
    fi
  done
done
peer_args=()
[ -n "$torch_device" ] && peer_args=(--device "$torch_device")
"${PYTHON:-python3}" bench/torch_peer.py "$sizes_file" "$out/torch.json" "${peer_args[@]}" || echo "peer failed"
python3 bench/report.py "$sizes_file" "$out" ${KS_TARGETS:-opencl} | tee "$out/results.md"
