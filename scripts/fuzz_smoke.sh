#!/usr/bin/env bash
# Builds the parsers' fuzz targets (Clang 15, libFuzzer, ASan and UBSan) into
# build-fuzz/ and runs each briefly over its seeds and regression inputs
# (tests/fuzz/README.md). Part of scripts/run_tests.sh; SECONDS per target, default 5.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-15 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKS_FUZZ=ON \
  -DKS_BUILD_TESTS=OFF > build-fuzz.configure.log 2>&1 || {
  cat build-fuzz.configure.log
  exit 1
}
ninja -C build-fuzz -j "${KS_JOBS:-2}" fuzz
bash tests/fuzz/smoke.sh build-fuzz "${1:-5}"
