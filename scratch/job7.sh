rm -f $OUT/configure.log $OUT/build.log
export KS_DTYPE=bf16
T=bench/tuned/h200-opencl-bf16
timeout 150 python3 bench/torch_peer.py bench/sizes_gpu.txt /tmp/torch_bf16.json --device cuda --no-compile --peers bench/peers --dtype bf16 > $OUT/eager_bf16.txt 2>&1
echo "== bf16 table, private bf16 copies packed"
timeout 200 ./build/ksmith bench examples --sizes bench/sizes_gpu.txt --peer /tmp/torch_bf16.json --target opencl --tuned $T --dtype bf16 > $OUT/bench_bf16_packed.txt 2>&1
echo "== bf16 table, f32 registers (KS_NO_PACK)"
KS_NO_PACK=1 KSMITH_CACHE_DIR=/tmp/nopack timeout 200 ./build/ksmith bench examples --sizes bench/sizes_gpu.txt --peer /tmp/torch_bf16.json --target opencl --tuned $T --dtype bf16 > $OUT/bench_bf16_f32regs.txt 2>&1
paste <(awk '{print $1, $3, $4}' $OUT/bench_bf16_packed.txt) <(awk '{print $3, $4, $6}' $OUT/bench_bf16_f32regs.txt) | head -45
tail -3 $OUT/bench_bf16_packed.txt $OUT/bench_bf16_f32regs.txt
