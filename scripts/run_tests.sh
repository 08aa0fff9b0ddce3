#!/usr/bin/env bash
# Sets up, builds, and runs every test (unit, device, lit golden and error tests),
# then the parsers' fuzz smoke run (a sanitized build of its own).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# Fresh caches: a test run must not depend on binaries left by an earlier one.
export KSMITH_CACHE_DIR="$(mktemp -d)"
trap 'rm -rf "$KSMITH_CACHE_DIR"' EXIT
(cd build && ctest --output-on-failure -j 2)
bash scripts/fuzz_smoke.sh
