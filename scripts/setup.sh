#!/usr/bin/env bash
# Installs what kernelsmith needs on Debian 12, as root. Idempotent: when every
# package is present it changes nothing and touches no package index.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config python3
  ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd
  libcli11-dev nlohmann-json3-dev libgtest-dev
  glslang-dev glslang-tools spirv-tools  # GLSL -> SPIR-V in-process; glslang's CMake package wants its tools
  libvulkan-dev spirv-headers mesa-vulkan-drivers  # the Vulkan loader and headers; lavapipe, Vulkan on the CPU
  llvm-15-tools  # FileCheck and lit for the golden and error tests (LLVM 15, as PoCL)
  python3-torch  # the peer: PyTorch, run by ksmith bench with /usr/bin/python3
  libsqlite3-dev libtomlplusplus-dev  # ksmith evolve: its run database and its configuration
  libxgboost-dev  # ksmith evolve's cost model (XGBoost's C API)
  libcurl4-openssl-dev  # ksmith evolve's model client: OpenAI-compatible chat completions over HTTP
  libtinyxml2-dev  # the models' answers: <reasoning>, then <schedule> or <kernel>
  libclang-cpp15-dev libclang-15-dev llvm-15-dev libclang-common-15-dev  # kernel bodies checked with Clang 15's libTooling (libclang-15-dev: its headers)
  chromium  # headless, to test ksmith evolve's HTML report
  clang-15 libfuzzer-15-dev  # the parsers' fuzz targets (tests/fuzz): libFuzzer, AddressSanitizer, UBSan
  libopenmpi-dev openmpi-bin  # mpirun ksmith tune across hosts (evolve/farm/); optional to the build
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
