#!/usr/bin/env bash
# The seed corpus of every fuzz target, assembled from the repo's own inputs (examples,
# schedules kept per device, golden files, kernel bodies, sizes files, configurations),
# the hand-written seeds/ and the crash inputs of regressions/:
#   bash tests/fuzz/seeds.sh OUT [KSMITH]     -> OUT/spec, OUT/schedule, OUT/ir, ...
# KSMITH (default build/ksmith, where built) prints the Graph and Loop IR of the
# examples as the ir target's seeds.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1 ksmith=${2:-build/ksmith}
rm -rf "$out"
mkdir -p "$out"/{spec,schedule,ir,config,answer,body,sizes}
flat() { echo "$1" | tr '/' '-'; }  # a file's path as one name
for f in examples/*.ks bench/peers/*.ks tests/adversarial/*.ks $(find tests/lit -name "*.ks"); do
  [[ -f $f ]] && cp "$f" "$out/spec/$(flat "$f")"
done
# The schedule target's first byte picks its spec (fuzz_schedule.cpp): 0 gemm, 1 softmax, 2 cumsum, 3 conv,
# 4 the rewrites' spec.
for f in examples/*.sched bench/tuned/*/*.sched tests/lit/inputs/*.sched; do
  case $(basename "$f" .sched) in
    gemm_bias_leaky) byte='\x00' ;; softmax) byte='\x01' ;; cumsum) byte='\x02' ;; conv2d) byte='\x03' ;;
    gemm_divide_sum* | *rewrite*) byte='\x04' ;; *) byte='\x00' ;;
  esac
  { printf "$byte"; cat "$f"; } > "$out/schedule/$(flat "$f")"
done
if [[ -x $ksmith ]]; then
  for f in examples/*.ks; do
    name=$(basename "$f" .ks)
    "$ksmith" compile "$f" --emit graph > "$out/ir/$name.graph" 2>/dev/null || rm -f "$out/ir/$name.graph"
    "$ksmith" compile "$f" --emit loops > "$out/ir/$name.loops" 2>/dev/null || rm -f "$out/ir/$name.loops"
    [[ -f examples/$name.sched ]] && { "$ksmith" compile "$f" --schedule "examples/$name.sched" --emit loops \
      > "$out/ir/$name.sched.loops" 2>/dev/null || rm -f "$out/ir/$name.sched.loops"; }
  done
fi
cp bench/*.toml tests/fuzz/seeds/config/* "$out/config/"
cp tests/fuzz/seeds/schedule/* "$out/schedule/"  # their first byte already picks the spec
for f in tests/fuzz/seeds/answer/*; do { printf '\x00'; cat "$f"; } > "$out/answer/$(basename "$f")"; done
cp tests/bodies/*.cl "$out/body/"
cp bench/sizes_*.txt "$out/sizes/"
for d in tests/fuzz/regressions/*/; do
  [[ -d $d ]] && cp "$d"* "$out/$(basename "$d")/" 2>/dev/null || true
done
for t in "$out"/*/; do echo "$(basename "$t"): $(ls "$t" | wc -l) seeds"; done
