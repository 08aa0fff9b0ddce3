#!/usr/bin/env bash
# Several schedules of one example timed side by side (ksmith time, in rounds), after
# PyTorch eager at the same sizes: a search's best beside hand-made variants of it
# (bench/chain_probe/README.md). On the H100, after bench/gpu.sh has built:
#   bash bench/gpu.sh bash bench/gpu_schedule_probe.sh NAME SIZES SCHEDULE...
# KS_PEER_DEVICE=cpu runs the peer on the CPU (here, with PATH=/usr/bin:$PATH: the
# python3 with PyTorch). Output in
# $OUT/probe-NAME.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
mkdir -p "$out"
name=$1 sizes=$2
shift 2
printf '%s %s\n' "$name" "$sizes" > /tmp/probe_sizes.txt
{
  python3 bench/torch_peer.py /tmp/probe_sizes.txt /tmp/probe_torch.json --device "${KS_PEER_DEVICE:-cuda}" \
    --no-compile > /tmp/probe_torch.log 2>&1 || cat /tmp/probe_torch.log
  python3 - "$name" <<'PY'
import json, sys
entry = json.load(open("/tmp/probe_torch.json")).get("problems", {}).get(sys.argv[1], {})
print("PyTorch eager: %.4f ms (spread %.2f%%)" % (entry["median_ms"], 100 * entry["cv"]) if "median_ms" in entry else "PyTorch eager: %s" % entry)
PY
  args=()
  for s in "$@"; do args+=(--schedule "$s"); done
  ./build/ksmith time "examples/$name.ks" --size "$sizes" --rounds 3 "${args[@]}" 2>&1
} | tee "$out/probe-$name.txt"
