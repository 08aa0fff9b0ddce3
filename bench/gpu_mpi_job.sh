#!/usr/bin/env bash
# `mpirun ksmith tune` with one rank a GPU, on 1, 2 and 4 GPUs of one host, the same
# suite and minutes per problem, after bench/gpu.sh's build:
#   bash bench/gpu.sh bash bench/gpu_mpi_job.sh MINUTES NAME...
# (device kind nvidia-h100-x4). The named examples form the suite (their sizes from
# bench/sizes_gpu.txt); each tuning's wall time, evaluations and evaluations a minute
# go to $OUT/mpi.md, the logs to $OUT/mpi.log. (KS_SIZES=bench/sizes_cpu.txt
# KS_ANY_DEVICE=1 with POCL_DEVICES="pthread pthread pthread pthread": a check of the
# script itself on PoCL.)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
minutes=$1
shift
grep "MPI:" build-gpu/CMakeCache.txt "$out/configure.log" 2>/dev/null | head -3
suite=/tmp/ks_suite
rm -rf "$suite" /tmp/ks_mpi_*
mkdir -p "$suite"
for name in "$@"; do
  cp "examples/$name.ks" "$suite/"
  grep "^$name " "${KS_SIZES:-bench/sizes_gpu.txt}" >> "$suite/sizes.txt"
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py=$(command -v /usr/bin/python3 || command -v python3)
# The OpenCL GPUs' selectors: a machine may list PoCL's CPU device first.
gpu_list=$(./build/ksmith devices --json | "$py" -c '
import json, sys
any = len(sys.argv) > 1  # a check of this script on CPU devices
print(" ".join(d["selector"] for d in json.load(sys.stdin) if d["api"] == "opencl" and (d["gpu"] or any)))' ${KS_ANY_DEVICE:+any})
read -r -a gpu <<< "$gpu_list"
gpus=${#gpu[@]}
tune() {  # RANKS DEVICES SECONDS
  local start end folder=/tmp/ks_mpi_$1
  start=$(date +%s.%N)
  # Fresh program caches each, ours and the driver's (NVIDIA's compute cache keeps the
  # kernels it compiled on disk): a tuning must not build on another's compiles.
  KSMITH_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout "$3" mpirun --oversubscribe -np "$1" \
    -x KSMITH_CACHE_DIR -x CUDA_CACHE_PATH -x LD_LIBRARY_PATH -x VK_DRIVER_FILES \
    ./build/ksmith tune "$suite" --sizes "$suite/sizes.txt" --out "$folder" --devices "$2" \
    --minutes-per-problem "$minutes" --config bench/evolve_gpu.toml >> "$out/mpi.log" 2>&1
  echo "exit $?" >> "$out/mpi.log"
  end=$(date +%s.%N)
  "$py" - "$folder" "$1" "$2" "$start" "$end" <<'PY'
import glob, json, sys
folder, ranks, devices, start, end = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
summaries = [json.load(open(p)) for p in glob.glob(folder + "/*.json")]
evaluations = sum(s.get("evaluations", 0) for s in summaries)
on = sorted({s.get("tuned_on", "?") for s in summaries})
minutes = (end - start) / 60
print(f"| {ranks} | {devices} | {len(summaries)} | {minutes:.2f} | {evaluations} | {evaluations / minutes:.1f} | {', '.join(on)} |")
PY
}
# Each tuning is cut off well past its expected time (the problems' minutes over the
# ranks, plus a minute), so that the table's rows so far come back whatever happens.
count=$#
limit() { "$py" -c "print(int($count * $minutes * 60 * 1.6 / $1 + 60))"; }
{
  echo "| ranks | --devices | problems | wall minutes | evaluations | a minute | tuned on |"
  echo "|---:|---|---:|---:|---:|---:|---|"
} | tee "$out/mpi.md"
tune 1 "${gpu[0]}" "$(limit 1)" | tee -a "$out/mpi.md"
[ "$gpus" -ge 2 ] && tune 2 "${gpu[0]},${gpu[1]}" "$(limit 2)" | tee -a "$out/mpi.md"
four=all  # every GPU: four on nvidia-h100-x4
[ -n "${KS_ANY_DEVICE:-}" ] && four="${gpu[0]},${gpu[1]},${gpu[2]},${gpu[3]}"
[ "$gpus" -ge 4 ] && tune 4 "$four" "$(limit 4)" | tee -a "$out/mpi.md"
echo "($gpus OpenCL GPUs: ${gpu[*]}; $minutes minutes a problem; $(nvidia-smi -L | head -1))" | tee -a "$out/mpi.md"
tail -30 "$out/mpi.log"
