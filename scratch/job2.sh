rm -f $OUT/configure.log $OUT/build.log
for v in A B C D; do
  echo "== f16 layer_norm body $v"
  ./build/ksmith run examples/layer_norm.ks --schedule scratch/ln_i.sched --kernel scratch/ln_f16_$v.cl --dtype f16 --size N=4096,D=16384 --check-size N=64,D=16384 2>&1 | tail -3
done
echo "== bf16 ln_i through run"
./build/ksmith run examples/layer_norm.ks --schedule scratch/ln_i.sched --dtype bf16 --size N=4096,D=16384 2>&1 | tail -2
