#!/usr/bin/env bash
# Sets up, builds, and runs the main job: ksmith evolve on an example (softmax) on the
# default device (the first GPU, else PoCL), from its naive kernel with the built-in
# mutator; it prints the best speedup found and where its report and schedule are.
# Four minutes or a hundred evaluations, whichever comes first: within five minutes
# on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
KS_BUILD_TARGETS=ksmith bash scripts/build.sh   # the tests are scripts/run_tests.sh's
./build/ksmith devices
exec ./build/ksmith evolve examples/softmax.ks --budget 100 --minutes 4 --workers 2 --out evolve_softmax "$@"
