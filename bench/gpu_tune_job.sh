#!/usr/bin/env bash
# `ksmith tune` on one GPU and on every GPU of the host, the same minutes per problem,
# after bench/gpu.sh's build:
#   bash bench/gpu.sh bash bench/gpu_tune_job.sh MINUTES NAME...
# The named examples form the suite (their sizes from bench/sizes_gpu.txt); each
# tuning's wall time, evaluations and evaluations a minute go to $OUT/tune.md, the
# tuned folders to $OUT/tuned.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
minutes=$1
shift
suite=/tmp/ks_suite
rm -rf "$suite" /tmp/ks_tune_one /tmp/ks_tune_all
mkdir -p "$suite"
for name in "$@"; do
  cp "examples/$name.ks" "$suite/"
  grep "^$name " bench/sizes_gpu.txt >> "$suite/sizes.txt"
done
py=$(command -v /usr/bin/python3 || command -v python3)
one=$(./build/ksmith devices --json | "$py" -c '
import json, sys
print(next(d["selector"] for d in json.load(sys.stdin) if d["api"] == "opencl" and d["gpu"]))')
gpus=$(./build/ksmith devices --json | "$py" -c '
import json, sys
print(sum(1 for d in json.load(sys.stdin) if d["api"] == "opencl" and d["gpu"]))')
tune() {  # OUT DEVICES
  local start end
  start=$(date +%s.%N)
  # A fresh program cache each: the second tuning must not build on the first's compiles.
  KSMITH_CACHE_DIR=$(mktemp -d) ./build/ksmith tune "$suite" --sizes "$suite/sizes.txt" --out "$1" --devices "$2" --minutes-per-problem "$minutes" \
    --config bench/evolve_gpu.toml 2>&1 | tee -a "$out/tune.log"
  end=$(date +%s.%N)
  "$py" - "$1" "$2" "$start" "$end" <<'PY'
import glob, json, sys
folder, devices, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
evaluations = sum(json.load(open(p)).get("evaluations", 0) for p in glob.glob(folder + "/*.json"))
minutes = (end - start) / 60
print(f"| {devices} | {len(glob.glob(folder + '/*.json'))} | {minutes:.2f} | {evaluations} | {evaluations / minutes:.1f} |")
PY
}
{
  echo "| devices | problems | wall minutes | evaluations | a minute |"
  echo "|---|---:|---:|---:|---:|"
  tune /tmp/ks_tune_one "$one"
  tune /tmp/ks_tune_all all
  echo "($gpus OpenCL GPUs; $minutes minutes a problem)"
} | grep "^|\|^(" | tee "$out/tune.md"
tar czf "$out/tuned.tar.gz" --exclude='*.db' -C /tmp ks_tune_one ks_tune_all 2>/dev/null
