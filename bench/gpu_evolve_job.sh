#!/usr/bin/env bash
# One device-tool call of the H100 evolve job (after bench/gpu.sh has built): the
# evaluator's adversarial check (first call only), then ksmith evolve on the named
# examples; the tuned schedules and run summaries come back as $OUT/tuned-PART.tar.gz
# (the device tool returns eight files at most), the reports and run databases as
# $OUT/reports-PART.tar.gz, the evaluations' throughput as $OUT/throughput-PART.md.
#   bash bench/gpu.sh bash bench/gpu_evolve_job.sh PART BUDGET MINUTES NAME...
set -uo pipefail
cd "$(dirname "$0")/.."
part=$1 budget=$2 minutes=$3
shift 3
out=${OUT:-/tmp/ks_out}
if [[ "$part" == 1 ]]; then bash bench/trust.sh 2>&1 | tee "$out/trust.txt"; fi
mkdir -p /tmp/ks_tuned /tmp/ks_reports
bash bench/evolve_gpu.sh bench/sizes_gpu.txt /tmp/ks_tuned "$budget" "$minutes" "$@" 2>&1 | tee "$out/evolve-$part.txt"
for name in "$@"; do
  [[ -f /tmp/ks_evolve/$name/report.html ]] && cp /tmp/ks_evolve/$name/report.html "/tmp/ks_reports/$name.html"
  [[ -f /tmp/ks_evolve/$name/evolve.db ]] && cp /tmp/ks_evolve/$name/evolve.db "/tmp/ks_reports/$name.db"
done
python3 bench/throughput.py /tmp/ks_reports/*.db > "$out/throughput-$part.md" 2>&1
tar czf "$out/tuned-$part.tar.gz" -C /tmp ks_tuned
tar czf "$out/reports-$part.tar.gz" -C /tmp ks_reports
