#!/usr/bin/env bash
# The one-kernel attention's generated OpenCL C and its hand variants (variants.py),
# each launched as async8r128s4.sched launches it, checked and timed at the timed sizes
# (issue 34), after bench/gpu.sh's build:
#   bash bench/gpu.sh bash bench/attention/online/hand_job.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
dir=bench/attention/online
python3 $dir/variants.py $dir/generated.cl /tmp
S=B=16,H=16,T=1024,D=64
for k in "" /tmp/vec.cl /tmp/partial.cl /tmp/partial_vec.cl; do
  echo "== ${k:-generated}"
  ./build/ksmith run examples/attention.ks --schedule $dir/async8r128s4.sched ${k:+--kernel $k} --size $S \
    --check-size B=1,H=1,T=1024,D=64 --batches 10 --baseline-ms 77.5 2>&1 | grep -E "check|versus|time |error"
done
