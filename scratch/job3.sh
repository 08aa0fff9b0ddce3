rm -f $OUT/configure.log $OUT/build.log
echo "== f16 layer_norm, stores through cvt.rn.f16x2.f32"
./build/ksmith run examples/layer_norm.ks --schedule scratch/ln_i.sched --dtype f16 --size N=4096,D=16384 2>&1 | tail -2
echo "== the examples at f16 with the bf16 bests"
timeout 120 python3 bench/torch_peer.py bench/sizes_gpu.txt /tmp/torch_f16.json --device cuda --no-compile --peers bench/peers --dtype f16 > $OUT/eager_f16.txt 2>&1
timeout 360 ./build/ksmith bench examples --sizes bench/sizes_gpu.txt --peer /tmp/torch_f16.json --target opencl --tuned bench/tuned/h200-opencl-bf16 --dtype f16 > $OUT/bench_f16.txt 2>&1
tail -50 $OUT/bench_f16.txt
