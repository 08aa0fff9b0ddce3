"""What the check_*.py scripts share: their two arguments, and a visible SKIP (exit
77, which ctest reports as skipped) where there is no OpenCL device."""
import json
import os
import subprocess
import sys


def ksmith_and_source():
    """KSMITH SOURCE_DIR from the command line, as absolute paths; SKIPs (exit 77)
    without an OpenCL device."""
    ksmith, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    devices = json.loads(subprocess.run([ksmith, "devices", "--json"], capture_output=True, text=True,
                                        check=True).stdout)
    if not any(d["api"] == "opencl" for d in devices):
        print("SKIP: no OpenCL device (install pocl-opencl-icd)")
        sys.exit(77)
    return ksmith, source
