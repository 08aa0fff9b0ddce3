#!/usr/bin/env bash
# Registers and times of the one-kernel attention's generated OpenCL C (issue 34):
#   bash bench/attention/online/probe_job.sh      (on the GPU machine, nothing carried)
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/cl_probe_setup.sh
N=16777216
python3 bench/attention/online/variants.py bench/attention/online/generated.cl /tmp
for f in bench/attention/online/generated.cl /tmp/partial_vec.cl; do
  for opt in "" "-cl-nv-maxrregcount=128" "-cl-nv-maxrregcount=168" "-cl-nv-maxrregcount=96"; do
    echo "== $f $opt"
    CL_PROBE_LOG=1 /tmp/cl_probe $f y 128,8,256 128,1,1 $N $N $N $N -O "-cl-nv-verbose $opt" 2>&1 | grep -iE "registers|spill|ms|stack" | head -6
  done
done
