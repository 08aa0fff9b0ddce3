#!/usr/bin/env bash
# The CPU benchmark on this (GPU-less) machine: every example on PoCL (OpenCL) and
# lavapipe (Vulkan) beside Debian's PyTorch (python3-torch, CPU) in the same run.
#   bash bench/cpu.sh [OUT_DIR]      (default: bench/out-cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed" || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch
}
bash scripts/build.sh
KS_TARGETS="opencl spirv" PYTHON=/usr/bin/python3 bash bench/run.sh bench/sizes_cpu.txt "${1:-bench/out-cpu}" "" cpu
