#!/usr/bin/env bash
# One device-tool call (after bench/gpu.sh has built) for issue 17: PyTorch eager from
# the importer's peer entries (bench/peers, the modules of bench/modules), then the
# suite with the tuned schedules of bench/tuned/h100-opencl (cumsum, which has none yet,
# with its hand-written scan), then cumsum at KernelBench's size three ways (naive box,
# scan, hand schedule on Vulkan), and the schedule lavapipe miscompiles on NVIDIA's
# Vulkan. Results in $OUT: torch.json, tuned-bench.txt, issue17.txt.
#   bash bench/gpu.sh bash bench/gpu_issue17_job.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
python3 bench/torch_peer.py bench/sizes_gpu.txt "$out/torch.json" --device cuda --no-compile 2>&1 | tail -30
cp examples/cumsum.sched bench/tuned/h100-opencl/cumsum.sched  # this copy only: the hand schedule until a search's
./build/ksmith bench examples --sizes bench/sizes_gpu.txt --peer "$out/torch.json" --target opencl \
  --tuned bench/tuned/h100-opencl 2>&1 | tee "$out/tuned-bench.txt"
{
  echo "== cumsum B=128,N=4000: naive box, then the hand-written scan (64 work-items), OpenCL and Vulkan"
  ./build/ksmith run examples/cumsum.ks --size B=128,N=4000
  for t in 64 256 1024; do
    printf 'bind y.b group.x\nscan y.i %s -> t\n' "$t" > /tmp/scan_$t.sched
    ./build/ksmith run examples/cumsum.ks --size B=128,N=4000 --schedule /tmp/scan_$t.sched
  done
  ./build/ksmith run examples/cumsum.ks --size B=128,N=4000 --schedule examples/cumsum.sched --target spirv
  echo "== the box under cache_write at N=37 on NVIDIA's Vulkan (lavapipe gets it wrong)"
  printf 'split y.k 29 -> t0 t1\ncache_write y.b private\n' > /tmp/cw.sched
  ./build/ksmith run examples/cumsum.ks --check-size B=3,N=37 --schedule /tmp/cw.sched --no-time --target spirv
} 2>&1 | tee "$out/issue17.txt"
