#!/usr/bin/env bash
# Where the fp32 GEMM stops on NVIDIA OpenCL (issue 34, its GEMM part): the hand-written
# GEMM of bench/probe_gemm.cl (registers stage the next panels) with a register cap
# (-cl-nv-maxrregcount, NVIDIA's cl_nv_compiler_options) and bench/probe_gemm_async.cl
# (cp.async through inline PTX, an NSTAGE-deep ring of local panels), beside cuBLAS in
# the same call. Checksums must equal the register-staged kernel's of the same shape.
#   bash bench/gpu_gemm_async_probe.sh         (through the device tool, nothing carried)
#   bash bench/gpu_gemm_async_probe.sh copies  (4-byte against 16-byte copies of b's panel)
#   bash bench/gpu_gemm_async_probe.sh tiles   (8 x 16 outputs a work-item, warp-shaped lanes)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/cl_probe_setup.sh
python3 bench/cublas_gemm.py
probe() {  # FILE M N K TRANS_B options...
  local file=$1 m=$2 n=$3 k=$4 t=$5
  shift 5
  local r ms
  r=$(/tmp/cl_probe "$file" gemm $((n / ${PROBE_TN:-8})),$((m / 8)),1 16,16,1 $((m * k)) $((n * k)) $((m * n)) \
    -D M=$m -D N=$n -D K=$k -D TRANS_B=$t "$@" 2>&1)
  ms=$(echo "$r" | sed -n 's/.*: \([0-9.]*\) ms.*/\1/p')
  if [ -n "$ms" ]; then
    echo "${file##*/} $m $n $k T=$t $* : $ms ms $(python3 -c "print(f'{2*$m*$n*$k/$ms/1e9:.1f}')") TFLOP/s | ${r##*checksum}"
  else
    echo "${file##*/} $m $n $k T=$t $* : $(echo "$r" | head -30)"
  fi
}
S="4096 4096 4096"
if [ "${1:-}" = tiles ]; then
  for t in 0 1; do
    probe bench/probe_gemm.cl $S $t -D KT=8 -D PREFETCH=1 -D UNROLL_K=8
    for tn in 8 16; do
      for ws in 0 1; do
        for st in 2 3; do
          PROBE_TN=$tn probe bench/probe_gemm_async.cl $S $t -D KT=8 -D NSTAGE=$st -D TN=$tn -D WARP_SHAPE=$ws
        done
        PROBE_TN=$tn probe bench/probe_gemm_async.cl $S $t -D KT=8 -D NSTAGE=2 -D TN=$tn -D WARP_SHAPE=$ws -D ASYNC=0
      done
    done
  done
  for t in 0 1; do
    for tn in 8 16; do
      PROBE_TN=$tn probe bench/probe_gemm_async.cl 1024 8192 8192 $t -D KT=8 -D NSTAGE=3 -D TN=$tn -D WARP_SHAPE=1
    done
  done
  CL_PROBE_LOG=1 /tmp/cl_probe bench/probe_gemm_async.cl gemm 256,512,1 16,16,1 16777216 16777216 16777216 \
    -D M=4096 -D N=4096 -D K=4096 -D TN=16 -D WARP_SHAPE=1 -O -cl-nv-verbose 2>&1 | grep -E "Used|spill" | tail -2
  exit 0
fi
if [ "${1:-}" = copies ]; then
  for shape in "8 2" "8 3" "8 4" "16 2"; do
    set -- $shape
    for bs in 0 1; do probe bench/probe_gemm_async.cl $S 0 -D KT=$1 -D NSTAGE=$2 -D B_SCALAR=$bs; done
  done
  probe bench/probe_gemm.cl $S 0 -D KT=8 -D PREFETCH=1 -D UNROLL_K=8
  exit 0
fi
echo "== registers (-cl-nv-verbose)"
for f in "bench/probe_gemm.cl -D KT=16 -D PREFETCH=1 -D UNROLL_K=16" "bench/probe_gemm_async.cl -D KT=8 -D NSTAGE=3"; do
  set -- $f
  CL_PROBE_LOG=1 /tmp/cl_probe "$1" gemm 512,512,1 16,16,1 16777216 16777216 16777216 -D M=4096 -D N=4096 -D K=4096 \
    "${@:2}" -O -cl-nv-verbose 2>&1 | grep -i -E "registers|spill|error|ptxas" | head -5
done
echo "== which local address cp.async takes"
ref=$(probe bench/probe_gemm.cl $S 0 -D KT=8 -D PREFETCH=1 -D UNROLL_K=8)
echo "$ref"
cvta=0
for c in 0 1; do
  r=$(probe bench/probe_gemm_async.cl $S 0 -D KT=8 -D NSTAGE=3 -D CVTA=$c)
  echo "$r"
  [ "${r##*|}" = "${ref##*|}" ] && cvta=$c && break
done
echo "CVTA=$cvta"
CL_PROBE_BINARY=$OUT/async.ptx /tmp/cl_probe bench/probe_gemm_async.cl gemm 16,16,1 16,16,1 65536 65536 65536 \
  -D M=128 -D N=128 -D K=512 -D KT=8 -D NSTAGE=3 >/dev/null 2>&1
grep -c "cp.async" "$OUT/async.ptx" 2>/dev/null
echo "== register-staged panels, capped"
for t in 0 1; do
  for kt in 8 16; do
    for cap in "" "-O -cl-nv-maxrregcount=128" "-O -cl-nv-maxrregcount=168"; do
      probe bench/probe_gemm.cl $S $t -D KT=$kt -D PREFETCH=1 -D UNROLL_K=$kt $cap
    done
  done
done
echo "== cp.async ring"
for t in 0 1; do
  for shape in "8 2" "8 3" "8 4" "16 2"; do
    set -- $shape
    for rows in 0 1; do
      for cap in "" "-O -cl-nv-maxrregcount=128"; do
        probe bench/probe_gemm_async.cl $S $t -D KT=$1 -D NSTAGE=$2 -D ROWS_A=$rows -D CVTA=$cvta $cap
      done
    done
  done
done
echo "== 1024 x 8192 x 8192"
for t in 0 1; do
  probe bench/probe_gemm.cl 1024 8192 8192 $t -D KT=16 -D PREFETCH=1 -D UNROLL_K=16
  probe bench/probe_gemm.cl 1024 8192 8192 $t -D KT=8 -D PREFETCH=1 -D UNROLL_K=8
  for shape in "8 3" "8 4" "16 2"; do
    set -- $shape
    probe bench/probe_gemm_async.cl 1024 8192 8192 $t -D KT=$1 -D NSTAGE=$2 -D CVTA=$cvta
  done
done
