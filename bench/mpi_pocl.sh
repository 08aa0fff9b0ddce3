#!/usr/bin/env bash
# `mpirun ksmith tune` on PoCL, one rank a device, 1 to N ranks on this host, the same
# suite and minutes per problem: the farm's scaling where there is no GPU.
#   bash bench/mpi_pocl.sh MINUTES MAX_RANKS NAME...
# Each PoCL device is one thread (POCL_MAX_PTHREAD_COUNT=1), so N ranks use N cores for
# their kernels; sizes from bench/sizes_cpu.txt, one worker a device. Prints a table row
# per rank count: wall minutes, evaluations, evaluations a minute, and the speedup of
# the rate over one rank.
set -uo pipefail
cd "$(dirname "$0")/.."
minutes=$1
max=$2
shift 2
suite=$(mktemp -d)
for name in "$@"; do
  cp "examples/$name.ks" "$suite/"
  grep "^$name " bench/sizes_cpu.txt >> "$suite/sizes.txt"
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 POCL_MAX_PTHREAD_COUNT=1
echo "| ranks | devices | problems | wall minutes | evaluations | a minute | x one rank |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
one=""
for ((n = 1; n <= max; n++)); do
  devices=$(printf 'pthread %.0s' $(seq "$n"))
  folder=$suite/tuned_$n
  start=$(date +%s.%N)
  POCL_DEVICES="$devices" KSMITH_CACHE_DIR=$(mktemp -d) mpirun --oversubscribe -np "$n" \
    ./build/ksmith tune "$suite" --sizes "$suite/sizes.txt" --out "$folder" --devices all --workers 1 \
    --minutes-per-problem "$minutes" > "$suite/log_$n.txt" 2>&1 || { tail "$suite/log_$n.txt"; exit 1; }
  end=$(date +%s.%N)
  row=$(/usr/bin/python3 - "$folder" "$start" "$end" <<'PY'
import glob, json, sys
folder, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
evaluations = sum(json.load(open(p)).get("evaluations", 0) for p in glob.glob(folder + "/*.json"))
minutes = (end - start) / 60
print(f"{len(glob.glob(folder + '/*.json'))} {minutes:.2f} {evaluations} {evaluations / minutes:.1f}")
PY
)
  read -r problems wall evaluations rate <<< "$row"
  [ -z "$one" ] && one=$rate
  echo "| $n | $n | $problems | $wall | $evaluations | $rate | $(/usr/bin/python3 -c "print(f'{$rate / $one:.2f}')") |"
done
rm -rf "$suite"
