#!/usr/bin/env bash
# Kernel bodies with their own launch plans on the H100 (after bench/gpu.sh has
# built): every honest body of tests/bodies/ run by `ksmith run --kernel` on NVIDIA's
# OpenCL at the GPU bench sizes (bench/sizes_gpu.txt), PyTorch eager on the same
# problems in the same call; the table comes back as $OUT/bodies.md.
#   bash bench/gpu.sh bash bench/gpu_bodies_job.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
mkdir -p /tmp/ks_bodies
: > /tmp/ks_bodies/sizes.txt
for body in tests/bodies/*.cl; do
  grep -q '^// expect: accepted' "$body" || continue
  spec=$(sed -n 's|^// spec: ||p' "$body")
  sizes=$(awk -v s="$spec" '$1 == s {print $2}' bench/sizes_gpu.txt)
  grep -q "^$spec " /tmp/ks_bodies/sizes.txt || echo "$spec $sizes" >> /tmp/ks_bodies/sizes.txt
  name=$(basename "$body" .cl)
  timeout 60 ./build/ksmith run "examples/$spec.ks" --kernel "$body" ${sizes:+--size "$sizes"} --device nvidia \
    --json > "/tmp/ks_bodies/$name.json" 2> "/tmp/ks_bodies/$name.err"
  echo "$name: exit $?"
done
python3 bench/torch_peer.py /tmp/ks_bodies/sizes.txt /tmp/ks_bodies/torch.json --device cuda --no-compile \
  > /tmp/ks_bodies/torch.log 2>&1 || cat /tmp/ks_bodies/torch.log
python3 - <<'PY' | tee "$out/bodies.md"
import glob, json, os
torch = json.load(open("/tmp/ks_bodies/torch.json")) if os.path.exists("/tmp/ks_bodies/torch.json") else {}
peer = torch.get("problems", {})
print("| body | spec at sizes | verdict | body ms | naive ms | over naive | eager ms | vs eager |")
print("|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob("/tmp/ks_bodies/*.json")):
    name = os.path.basename(path)[:-5]
    if name == "torch":
        continue
    try:
        r = json.load(open(path))
    except Exception:
        err = open(path[:-5] + ".err").read().strip().splitlines()
        print("| %s | | %s | | | | | |" % (name, (err[-1] if err else "no output")[:120]))
        continue
    t = r.get("time", {})
    spec = r.get("kernel", "")
    eager = peer.get(spec, {}).get("median_ms")
    ms = t.get("median_ms")
    print("| %s | %s %s | %s | %s | %s | %s | %s | %s |" % (
        name, spec, t.get("sizes", ""), r.get("verdict", "")[:100],
        "%.4g" % ms if ms else "", "%.4g" % t["baseline_ms"] if t.get("baseline_ms") else "",
        "%.2fx" % t["speedup"] if t.get("speedup") else "", "%.4g" % eager if eager else "",
        "%.2fx" % (eager / ms) if eager and ms else ""))
PY
