#!/usr/bin/env bash
# conv_relu_bias's convolution on the H100, probed by hand (bench/results.md, "the
# level-2 conv"): the OpenCL C that ksmith generates for the schedules in
# bench/conv_probe/ (bench/conv_probe/cl/CN.cl, before unguard-accumulators), and the
# same with the tile's guard dropped from the accumulation (/tmp/CN_ng.cl: the outputs
# past the edge computed from the panels' zero padding, only their stores guarded),
# timed by bench/cl_probe.cpp
# beside PyTorch's convolution alone and the whole chain. No ksmith build needed:
#   bash bench/gpu_conv_probe.sh      (through the device tool, nothing carried)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/cl_probe_setup.sh
python3 - <<'PY'
import torch, torch.nn.functional as F
torch.backends.cudnn.allow_tf32 = False
x = torch.rand(128, 64, 128, 128, device='cuda') * 2 - 1
w = torch.rand(128, 64, 3, 3, device='cuda') * 2 - 1
cb = torch.rand(128, device='cuda'); b = torch.rand(128, device='cuda')
flop = 2 * 128 * 128 * 126 * 126 * 64 * 9
for name, f in [("conv2d", lambda: F.conv2d(x, w)),
                ("chain", lambda: torch.relu(F.conv2d(x, w, cb)) + b.view(1, -1, 1, 1))]:
    for _ in range(3): f()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(20):
        s.record(); f(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); print(f"torch {name}: {ts[10]:.4f} ms = {flop / ts[10] / 1e9:.1f} TFLOP/s")
PY
# The same kernels with the accumulation's guard dropped (the first `if` inside the
# reduction loop over co), as unguard-accumulators now does.
for f in bench/conv_probe/cl/c?.cl; do
  python3 - "$f" "/tmp/$(basename "$f" .cl)_ng.cl" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
i, j = s.index("for (int co ="), s.index("_out = 0;")
body = re.sub(r"if \((ow < 126|wr \* 64 \+ \(wt \* 4 \+ 3\) < 126)\) \{", "if (1) {", s[i:j], count=1)
open(sys.argv[2], "w").write(s[:i] + body + s[j:])
PY
done
for f in bench/conv_probe/cl/c?.cl /tmp/c?_ng.cl; do
  r=$(/tmp/cl_probe "$f" conv 16,16,16128 16,$(grep -m1 -o 'reqd_work_group_size(16, [0-9]*' "$f" | awk '{print $2}'),1 \
    $((128 * 64 * 128 * 128)) $((128 * 64 * 9)) $((128 * 128 * 126 * 126)) 2>&1)
  ms=$(echo "$r" | sed -n 's/.*: \([0-9.]*\) ms.*/\1/p')
  echo "$f: ${ms:-$r} ms $([ -n "$ms" ] && python3 -c "print(f'{2*128*128*126*126*64*9/$ms/1e9:.1f} TFLOP/s')") ${r##*checksum}"
done
