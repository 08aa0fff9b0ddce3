#!/usr/bin/env bash
# Evaluations a minute of `ksmith evolve` (bench/evolve_gpu.toml's settings) on
# examples at the sizes of SIZES, each searched for MINUTES from its naive kernel, and
# where an evaluation's time goes: per problem the evaluations, their rate, and the
# medians over its evaluations of the wall time, the device's time (the record's
# seconds.device without the driver's builds) and the builds. A table on stdout.
#   bash bench/search/throughput.sh SIZES MINUTES [NAME...]
# On the H100: bash bench/gpu.sh bash bench/search/throughput.sh bench/sizes_gpu.txt 1 softmax gelu ...
# Here (PoCL): bash bench/search/throughput.sh bench/sizes_cpu.txt 1 softmax
set -uo pipefail
cd "$(dirname "$0")/../.."
sizes=$1 minutes=$2
shift 2
py=$(command -v /usr/bin/python3 || command -v python3)
mkdir -p /tmp/ks_throughput
echo "| problem | evaluations | minutes | a minute | wall s | device s | builds s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
while read -r name assignments; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if (($#)) && [[ " $* " != *" $name "* ]]; then continue; fi
  out=/tmp/ks_throughput/$name
  rm -rf "$out"
  "${KSMITH:-./build/ksmith}" evolve "examples/$name.ks" --config bench/evolve_gpu.toml --size "$assignments" \
    --budget 100000 --minutes "$minutes" --out "$out" > "$out.log" 2>&1
  "$py" - "$out/evolve.db" "$name" <<'PY'
import json, sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
run_seconds, = db.execute("select seconds from runs order by id desc limit 1").fetchone()
rows = db.execute("select seconds, record from candidates where record != ''").fetchall()
wall, device, builds = [], [], []
for seconds, record in rows:
    r = json.loads(record)
    d = r.get("seconds", {}).get("device", {})
    wall.append(seconds)
    device.append(sum(v for k, v in d.items() if not k.endswith(".build")))
    builds.append(sum(v for k, v in d.items() if k.endswith(".build")))
med = lambda v: statistics.median(v) if v else 0
n = len(rows)
print(f"| {sys.argv[2]} | {n} | {run_seconds / 60:.2f} | {n / (run_seconds / 60):.1f} | {med(wall):.2f} | "
      f"{med(device):.3f} | {med(builds):.2f} |")
PY
done < "$sizes"
