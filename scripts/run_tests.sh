#!/usr/bin/env bash
# Sets up, builds, and runs every test (unit, device, lit golden and error tests),
# then the parsers' fuzz smoke run (a sanitized build of its own). With --quick, the
# edit loop's tier instead: every test not labelled slow (ctest -LE slow: no
# searches, command-line scripts or fuzzing), about a minute and a half on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# Fresh caches: a test run must not depend on binaries left by an earlier one.
export KSMITH_CACHE_DIR="$(mktemp -d)"
trap 'rm -rf "$KSMITH_CACHE_DIR"' EXIT
if [[ "${1:-}" == "--quick" ]]; then  # the edit loop's tier: no searches, scripts or fuzzing
  (cd build && ctest --output-on-failure -j 2 -LE slow)
  exit 0
fi
(cd build && ctest --output-on-failure -j 2)
bash scripts/fuzz_smoke.sh
