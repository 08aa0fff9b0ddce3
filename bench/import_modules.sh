#!/usr/bin/env bash
# Import every example's PyTorch module (examples/NAME.py) into bench/peers/: NAME.ks (the
# imported spec) and NAME.peer.json (what torch_peer.py builds and times), and examples/NAME.ks
# where the example is the importer's output (the level-2 problems of the rewrites). Run after
# changing a module or the importer, then commit both: tests/check_import.py fails while they
# differ from what the importer writes. Runs the importer as `ksmith import` does (Debian's
# Python, python3-torch), so no build is needed. Usage: bash bench/import_modules.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/peers
for module in examples/*.py; do
  name="$(basename "$module" .py)"
  /usr/bin/python3 tools/ksmith_import "$module" -o "bench/peers/$name.ks"   # and bench/peers/$name.peer.json
  echo "bench/peers/$name.ks, bench/peers/$name.peer.json"
  # An example that is the importer's output (its first line says so) is imported again too.
  if head -1 "examples/$name.ks" 2>/dev/null | grep -q '^# Imported by `ksmith import`'; then
    /usr/bin/python3 tools/ksmith_import "$module" -o "examples/$name.ks" --peer /dev/null
    echo "examples/$name.ks"
  fi
done
