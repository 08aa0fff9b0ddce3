#!/usr/bin/env bash
# One device-tool call of the rewrites' H100 job (after bench/gpu.sh has built):
# PyTorch eager on the named examples at bench/sizes_gpu.txt's sizes first, then for
# each ksmith evolve from the naive kernel with the documented configuration
# (bench/evolve_gpu.toml) in the arms named by KS_ARMS (bench/arms.sh; default
# "model as_written": the search, and the same search on the graph as written), then
# `ksmith bench` of the examples with each arm's best schedules beside the eager times
# (and of KS_BENCH's examples with their schedules kept in KS_TUNED).
# What comes back: $OUT/rewrite-PART.txt (the log and both tables) and
# $OUT/rewrite-PART.tar.gz (the runs' databases, reports and best schedules).
#   bash bench/gpu.sh bash bench/gpu_rewrite_job.sh PART BUDGET MINUTES NAME...
# Here (PoCL, PyTorch on the CPU): KS_SIZES=bench/sizes_cpu.txt KS_TORCH_DEVICE=cpu PYTHON=/usr/bin/python3 \
#   OUT=/tmp/out bash bench/gpu_rewrite_job.sh 1 30 3 gemm_divide_sum
set -uo pipefail
cd "$(dirname "$0")/.."
part=$1 budget=$2 minutes=$3
shift 3
out=${OUT:-/tmp/ks_out}
log="$out/rewrite-$part.txt"
work=/tmp/ks_rewrite
mkdir -p "$work/suite"
# The suite benched: the examples searched, and those of KS_BENCH (their best as kept
# in KS_TUNED, default bench/tuned/h100-opencl, unless this call finds one).
bench=("$@" ${KS_BENCH:-})
pattern=$(printf '%s|' "${bench[@]}")
grep -E "^(${pattern%|}) " "${KS_SIZES:-bench/sizes_gpu.txt}" > "$work/sizes.txt"
for name in "${bench[@]}"; do cp "examples/$name.ks" "$work/suite/"; done
{
  echo "== PyTorch eager ($("${PYTHON:-python3}" -c 'import torch; print(torch.__version__)'))"
  "${PYTHON:-python3}" bench/torch_peer.py "$work/sizes.txt" "$work/torch.json" --device "${KS_TORCH_DEVICE:-cuda}" \
    --no-compile 2>&1 | tail -3
  for arm in ${KS_ARMS:-model as_written}; do
    # (no names: nothing searched, the kept schedules benched)
    (($#)) && KS_EVOLVE_FLAGS="--config bench/evolve_gpu.toml" bash bench/run_arm.sh "$work/sizes.txt" "$work/runs" \
      "$arm" 1 "$budget" "$minutes" "$@"
    mkdir -p "$work/tuned-$arm"
    for name in "${bench[@]}"; do
      [[ -f "${KS_TUNED:-bench/tuned/h100-opencl}/$name.sched" ]] && cp "${KS_TUNED:-bench/tuned/h100-opencl}/$name.sched" "$work/tuned-$arm/"
    done
    for name in "$@"; do
      [[ -f "$work/runs/$name-$arm-s1/best.sched" ]] && cp "$work/runs/$name-$arm-s1/best.sched" "$work/tuned-$arm/$name.sched"
    done
    echo "== ksmith bench, $arm's best schedules, beside PyTorch eager"
    ./build/ksmith bench "$work/suite" --sizes "$work/sizes.txt" --peer "$work/torch.json" --target opencl \
      --tuned "$work/tuned-$arm" 2>&1
  done
} 2>&1 | tee "$log"
tar czf "$out/rewrite-$part.tar.gz" -C "$work" runs tuned-model tuned-as_written torch.json sizes.txt 2>/dev/null ||
  tar czf "$out/rewrite-$part.tar.gz" -C "$work" .
