#!/usr/bin/env bash
# The whole GPU job, run on the H100 machine through the device tool:
#   bash bench/gpu.sh              (with .deps carried, as scripts/gpu_deps.sh fills it)
#   bash bench/gpu.sh COMMAND...   set up and build, then run COMMAND instead of the
#                                  benchmark (e.g. bash bench/gpu_job.sh JOB ARGS..., the
#                                  measurements of bench/README.md)
# Registers NVIDIA's OpenCL driver, puts the carried Vulkan loader on the library
# path (the driver's own manifest works without a display), builds with that
# machine's g++/cmake (no Clang, no tests: GoogleTest is not there), lists devices,
# then benchmarks every example on NVIDIA OpenCL and NVIDIA Vulkan beside PyTorch
# eager on CUDA. Results land in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
mkdir -p /etc/OpenCL/vendors "$out"
echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The installed manifest names libGLX_nvidia.so.0, which yields no vkCreateInstance
# without glvnd; the EGL library holds the same driver and works headless.
if [ -f /usr/local/nvidia/lib64/libEGL_nvidia.so.0 ]; then
  printf '{"file_format_version": "1.0.1", "ICD": {"library_path": "libEGL_nvidia.so.0", "api_version": "1.3.0"}}\n' \
    > /tmp/ks_nvidia_icd.json
  export VK_DRIVER_FILES=/tmp/ks_nvidia_icd.json
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
# The loader may be there without its development symlink: name the library itself.
opencl_lib=$(ldconfig -p | awk '/libOpenCL\.so(\.1)? / {print $NF; exit}')
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKS_BUILD_TESTS=OFF \
  -DKS_EXTRA_INCLUDE="$PWD/.deps/include" -DKS_EXTRA_LIB="$PWD/.deps/usr/lib/x86_64-linux-gnu" \
  -DOpenCL_INCLUDE_DIR="$PWD/.deps/include" -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" \
  ${opencl_lib:+-DOpenCL_LIBRARY="$opencl_lib"} > "$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
ninja -C build-gpu -j 16 > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
./build-gpu/ks_interpreter_bench | tee -a "$out/gpu.txt"
mkdir -p build && cp build-gpu/ksmith build/ksmith
./build/ksmith devices | tee -a "$out/gpu.txt"
# The 16-bit conversions (PTX cvt on NVIDIA's OpenCL) against their table on every GPU:
# the unit tests' HalfOnDevice check, which this build (no GoogleTest) cannot run.
./build-gpu/ks_half_conversions | tee -a "$out/gpu.txt"
if [ $# -gt 0 ]; then
  "$@"
  exit $?
fi
# Records go to a scratch folder and come back as one archive: $OUT returns 8 files at most.
KS_TARGETS="opencl spirv" bash bench/run.sh bench/sizes_gpu.txt /tmp/ks_run nvidia cuda
cp /tmp/ks_run/results.md "$out/results.md"
tar czf "$out/records.tar.gz" -C /tmp ks_run
