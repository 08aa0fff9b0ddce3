#!/usr/bin/env bash
# Sets up, builds, and runs the main job: every example checked against the
# reference interpreter and timed on the default device (the first GPU, else PoCL).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/ksmith devices
status=0
for spec in examples/*.ks; do
  ./build/ksmith run "$spec" || status=1
done
exit $status
