#!/usr/bin/env bash
# The GEMM code-shape probe on the H100 (bench/results.md, "prefetched panels"): a
# hand-written OpenCL GEMM (bench/probe_gemm.cl) in its variants (panel copies as
# float4 or scalars, the next step prefetched into registers or not, one or two
# local buffers, k by 8, 16 or 32, the k loop unrolled or not), timed by
# bench/cl_probe.cpp beside cuBLAS. No kernelsmith build needed:
#   bash bench/gpu_gemm_probe.sh      (through the device tool, nothing carried)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/cl_probe_setup.sh
python3 bench/cublas_gemm.py
probe() {  # M N K TRANS_B options...
  local m=$1 n=$2 k=$3 t=$4
  shift 4
  local r ms
  r=$(/tmp/cl_probe bench/probe_gemm.cl gemm $((n / 8)),$((m / 8)),1 16,16,1 $((m * k)) $((n * k)) $((m * n)) \
    -D M=$m -D N=$n -D K=$k -D TRANS_B=$t "$@" 2>&1)
  ms=$(echo "$r" | sed -n 's/.*: \([0-9.]*\) ms.*/\1/p')
  if [ -n "$ms" ]; then
    echo "$m $n $k T=$t $* : $ms ms $(python3 -c "print(f'{2*$m*$n*$k/$ms/1e9:.1f}')") TFLOP/s | ${r##*checksum}"
  else
    echo "$m $n $k T=$t $* : $r"
  fi
}
for t in 1 0; do
  for kt in 8 16 32; do
    for vec in 0 1; do
      for pf in 0 1; do
        for nb in 1 2; do
          [ $kt = 32 ] && [ $nb = 2 ] && continue  # 67 KB of local memory
          for u in "" "-D UNROLL_K=$kt"; do
            probe 4096 4096 4096 $t -D KT=$kt -D VEC=$vec -D PREFETCH=$pf -D NBUF=$nb $u
          done
        done
      done
    done
  done
done
