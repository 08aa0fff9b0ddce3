rm -f $OUT/configure.log $OUT/build.log
for v in ln_bf16_tree:ln_i ln_bf16_packed:ln_i ln_bf16_r8_packed:ln_i sm_bf16_tree:sm_i sm_bf16_packed:sm_i; do
  k=${v%%:*}; s=${v##*:}; e=layer_norm; [[ $k == sm* ]] && e=softmax
  echo "== $k"
  ./build/ksmith run examples/$e.ks --schedule scratch/$s.sched --kernel scratch/$k.cl --dtype bf16 --size N=4096,D=16384 --check-size N=64,D=16384 2>&1 | grep -E "time|versus"
done
