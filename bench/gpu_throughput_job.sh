#!/usr/bin/env bash
# Issue 33's measurement on the H100, after bench/gpu.sh's build:
#   bash bench/gpu.sh bash bench/gpu_throughput_job.sh MINUTES NAME...
# the cheat catalogue through `ksmith run` and through one `ksmith worker`
# (bench/trust.sh), then bench/throughput.sh on the named examples at
# bench/sizes_gpu.txt's sizes (KernelBench's), MINUTES each. Results in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
minutes=$1
shift
if [[ -z "${KS_SKIP_TRUST:-}" ]]; then
  { echo "== ksmith run"; bash bench/trust.sh; echo "== ksmith worker"; KS_TRUST_WORKER=1 bash bench/trust.sh; } \
    2>&1 | tee "$out/trust.txt"
fi
bash bench/throughput.sh bench/sizes_gpu.txt "$minutes" "$@" 2>&1 | tee "$out/throughput.md"
tar czf "$out/throughput_dbs.tar.gz" -C /tmp ks_throughput 2>/dev/null
