#!/usr/bin/env bash
# Issue 34's measurement on the H100, after bench/gpu.sh's build:
#   bash bench/gpu.sh bash bench/gpu_reach_job.sh MINUTES NAME...
# (KS_REACH_ARMS="with" runs one arm; KS_REACH_BASELINE=bench/tuned/h100-opencl also times
# that folder's schedules of the same problems in the same call, the table before the change.)
# PyTorch eager (TF32 off) on the named examples at bench/sizes_gpu.txt's sizes; then
# for each, ksmith evolve from the naive kernel for MINUTES with the sketches as they
# are (split reductions, `rewrite rfactor`, drawn where a reduction is too narrow for
# the device) and for MINUTES with --no-rewrites (the graph as written: the space
# before rfactor); then ksmith bench with each run's best beside PyTorch. The best
# schedules and run databases come back in $OUT/reach-tuned.tar.gz (with/ and
# without/), the tables
# in $OUT/reach.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
minutes=$1
shift
sizes=/tmp/ks_reach_sizes.txt
: > "$sizes"
for name in "$@"; do grep -E "^$name[[:space:]]" bench/sizes_gpu.txt >> "$sizes"; done
python3 bench/torch_peer.py "$sizes" /tmp/torch.json --device cuda --no-compile 2>&1 | tail -3
rm -rf /tmp/ks_reach && mkdir -p /tmp/ks_reach/with /tmp/ks_reach/without
{
  while read -r name assignments; do
    for arm in ${KS_REACH_ARMS:-with without}; do
      flags=()
      [[ $arm == without ]] && flags=(--no-rewrites)
      run=/tmp/ks_reach/runs/$arm/$name
      echo "== $name $arm ($assignments)"
      ./build/ksmith evolve "examples/$name.ks" --config bench/evolve_gpu.toml --size "$assignments" --budget 100000 \
        --minutes "$minutes" --out "$run" "${flags[@]}" 2>&1 | grep -v "evaluated (" | tail -4
      [[ -f $run/best.sched ]] && cp "$run/best.sched" "/tmp/ks_reach/$arm/$name.sched"
      ./build/ksmith runs "$run/evolve.db" --json > "/tmp/ks_reach/$arm/$name.json"
      cp "$run/evolve.db" "/tmp/ks_reach/$arm/$name.db"
    done
  done < "$sizes"
  for arm in ${KS_REACH_ARMS:-with without}; do
    echo "== ksmith bench, the $arm arm's bests"
    mkdir -p /tmp/ks_reach/specs && for name in "$@"; do cp "examples/$name.ks" /tmp/ks_reach/specs/; done
    ./build/ksmith bench /tmp/ks_reach/specs --sizes "$sizes" --peer /tmp/torch.json --target opencl \
      --tuned "/tmp/ks_reach/$arm"
  done
  if [[ -n ${KS_REACH_BASELINE:-} ]]; then
    echo "== ksmith bench, $KS_REACH_BASELINE's schedules"
    ./build/ksmith bench /tmp/ks_reach/specs --sizes "$sizes" --peer /tmp/torch.json --target opencl \
      --tuned "$KS_REACH_BASELINE"
  fi
} 2>&1 | tee "$out/reach.txt"
tar czf "$out/reach-tuned.tar.gz" -C /tmp/ks_reach with without
