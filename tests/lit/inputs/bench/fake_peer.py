"""A peer script in torch_peer.py's form, without PyTorch: it says what it was given.
fake_peer.py SIZES OUT --device D [--tf32]; with FAIL in the environment it crashes."""
import json
import os
import sys

if os.environ.get("FAIL"):
    raise RuntimeError("the fake peer was told to fail")
sizes, out, device = sys.argv[1], sys.argv[2], sys.argv[4]
names = [line.split()[0] for line in open(sizes) if line.split("#")[0].strip()]
with open(out, "w") as f:
    json.dump({"torch": "fake", "device": device, "compile": "available",
               "precision": "tf32" if "--tf32" in sys.argv else "fp32",
               "problems": {name: {"median_ms": 1000.0, "compiled_ms": 0.000001} for name in names}}, f)
