rm -f $OUT/configure.log $OUT/build.log
KS_DTYPE=bf16 timeout 270 bash bench/gpu_job.sh search 400 1.2 layer_norm softmax > $OUT/search.log 2>&1
tail -25 $OUT/search.log
ls $OUT
