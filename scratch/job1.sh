set -x
rm -f $OUT/configure.log $OUT/build.log
export KS_DTYPE=bf16
T=bench/tuned/h200-opencl-bf16
bash bench/gpu_job.sh schedules layer_norm N=4096,D=16384 $T/layer_norm.sched scratch/ln_i.sched scratch/ln_i128.sched scratch/ln_i512.sched scratch/ln_i1024.sched scratch/ln_c.sched
bash bench/gpu_job.sh schedules softmax N=4096,D=16384 $T/softmax.sched scratch/sm_i.sched scratch/sm_i128.sched scratch/sm_i512.sched scratch/sm_i1024.sched scratch/sm_c.sched
(cd bench && python3 - <<'PY'
import torch
from cuda_timing import median_ms
for dt in (torch.bfloat16, torch.float16, torch.float32):
    for n in (64 << 20,):
        a = torch.randn(n, device="cuda", dtype=dt); b = torch.empty_like(a)
        ms = median_ms(lambda: b.copy_(a))
        print(f"copy {dt} {n} elements: {ms:.4f} ms, {2 * n * a.element_size() / ms / 1e9:.2f} TB/s")
PY
)
bash bench/gpu_job.sh schedules attention B=16,H=16,T=1024,D=64 bench/mma/attention/attention_two_pass_half_b64x16.sched scratch/att_w16.sched scratch/att_r3.sched scratch/att_w16r3.sched
mkdir -p $OUT/f16; OUT=$OUT/f16 KS_DTYPE=f16 bash bench/gpu_job.sh schedules layer_norm N=4096,D=16384 scratch/ln_i.sched scratch/ln_i512.sched

