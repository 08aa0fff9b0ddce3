#!/usr/bin/env bash
# Configures and builds kernelsmith into build/ (two parallel jobs: the CI machine
# has two cores); KS_BUILD_TARGETS="ksmith" builds the command alone (no tests).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" > build.configure.log 2>&1 || {
  cat build.configure.log
  exit 1
}
# shellcheck disable=SC2086
ninja -C build -j "${KS_JOBS:-2}" ${KS_BUILD_TARGETS:-}
