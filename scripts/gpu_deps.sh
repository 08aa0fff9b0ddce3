#!/usr/bin/env bash
# Fills .deps (ignored by git) with what the GPU machine lacks, from this Debian 12
# machine's packages, for the device tool's `carry: [".deps"]` (64 MiB at most):
#   .deps/include  header-only CLI11, nlohmann-json and toml++, the OpenCL headers,
#                  SQLite's and XGBoost's headers (their libraries are under .deps/usr)
#   .deps/usr      glslang and SPIRV-Tools: headers, static libraries and their CMake
#                  packages, laid out as under /usr so the packages find themselves;
#                  the Vulkan headers, SPIR-V's headers and the Vulkan loader
#                  (libvulkan.so.1, which the runtime opens through LD_LIBRARY_PATH);
#                  XGBoost's shared library (Debian has no static one) and what it
#                  needs, found through LD_LIBRARY_PATH too
# Idempotent: run it again after a package upgrade.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
arch=x86_64-linux-gnu
rm -rf .deps
mkdir -p .deps/include .deps/usr/include .deps/usr/lib/$arch/cmake .deps/usr/bin
cp -r /usr/include/{CLI,nlohmann,CL,toml++,xgboost} /usr/include/sqlite3.h /usr/include/sqlite3ext.h .deps/include/
cp -r /usr/include/{glslang,spirv-tools,vulkan,vk_video,spirv} .deps/usr/include/
cp -L /usr/lib/$arch/libvulkan.so.1 .deps/usr/lib/$arch/
cp /usr/lib/$arch/libsqlite3.a .deps/usr/lib/$arch/  # linked in: the GPU machine has no SQLite headers
cp -L /usr/lib/$arch/{libxgboost.so.0,libdmlc.so.0,libgomp.so.1} .deps/usr/lib/$arch/
ln -s libxgboost.so.0 .deps/usr/lib/$arch/libxgboost.so
for lib in glslang MachineIndependent GenericCodeGen OSDependent OGLCompiler HLSL SPIRV SPVRemapper \
  glslang-default-resource-limits SPIRV-Tools SPIRV-Tools-opt SPIRV-Tools-link SPIRV-Tools-lint \
  SPIRV-Tools-diff SPIRV-Tools-reduce; do
  cp /usr/lib/$arch/lib$lib.a .deps/usr/lib/$arch/
done
cp -r /usr/lib/$arch/cmake/{glslang,SPIRV-Tools,SPIRV-Tools-opt,SPIRV-Tools-link,SPIRV-Tools-lint,SPIRV-Tools-diff,SPIRV-Tools-reduce,SPIRV-Tools-tools} \
  .deps/usr/lib/$arch/cmake/
# glslang's CMake package insists that its tools exist, though the build never runs
# them: empty files stand in (the real glslangValidator is 7 MiB of the 64 the device
# tool carries).
touch .deps/usr/bin/{glslangValidator,spirv-remap}
du -sh .deps
