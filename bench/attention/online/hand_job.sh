set -uo pipefail
S=B=16,H=16,T=1024,D=64
for k in "" bench/attention/online/vec.cl bench/attention/online/partial.cl bench/attention/online/partial_vec.cl; do
  echo "== ${k:-generated}"
  ./build/ksmith run examples/attention.ks --schedule bench/attention/online/async8r128s4.sched ${k:+--kernel $k} --size $S \
    --check-size B=1,H=1,T=1024,D=64 --batches 10 --baseline-ms 77.5 2>&1 | grep -E "check|versus|time |error"
done
