rm -f $OUT/configure.log $OUT/build.log
export KS_DTYPE=bf16
echo "== layer_norm, softmax at f16 and bf16 with the new schedules"
for dt in f16 bf16; do for s in ln_i:layer_norm sm_i:softmax; do
  ./build/ksmith run examples/${s##*:}.ks --schedule scratch/${s%%:*}.sched --dtype $dt --size N=4096,D=16384 2>&1 | grep -E "time|versus|check" | sed "s/^/$dt ${s##*:} /"
done; done
echo "== attention at bf16, 72 s: the search against random search"
KS_ARMS="model random" timeout 420 bash bench/gpu_job.sh arms 1 400 1.2 attention > $OUT/arms.txt 2>&1
tail -30 $OUT/arms.txt; cat $OUT/compare-1.md 2>/dev/null | head -30
