#!/usr/bin/env bash
# Packs the fuzz targets built here (build-fuzz, Clang 15 with sanitizers) into
# .fuzz/ (ignored by git) for the device tool's carry, so that a campaign runs on
# a machine with more cores than this one (Debian 12 binaries run on its Ubuntu 24.04):
#   bash bench/fuzz/fuzz_pack.sh && <device> carry [".fuzz"]:
#   bash bench/fuzz/fuzz_campaign.sh .fuzz/bin EXECUTIONS 16 $OUT/campaign [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .fuzz && mkdir -p .fuzz/bin
# Not fuzz_config: the configuration's checks link the search, and with it LLVM's
# shared libraries (over the carry's 64 MiB); its campaign runs here.
cp build-fuzz/tests/fuzz/fuzz_* .fuzz/bin/
rm .fuzz/bin/fuzz_config
# Shared libraries the device machine lacks, beside the targets (LD_LIBRARY_PATH).
for exe in .fuzz/bin/fuzz_*; do
  ldd "$exe" | awk '/=> \// {print $3}' | grep -E "tinyxml2|xgboost|dmlc|OpenCL" | xargs -r -I{} cp -Ln {} .fuzz/bin/
done
du -sh .fuzz
