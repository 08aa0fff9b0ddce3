# lit configuration: golden tests of --emit output and error tests of bad input.
# Run through ctest, which passes the ksmith binary and the LLVM tools folder.
import os
import lit.formats

config.name = "kernelsmith"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ks", ".test"]
config.test_source_root = os.path.dirname(__file__)
# Outputs of RUN lines go to the build folder, never into the source tree.
config.test_exec_root = lit_config.params.get("exec_root", os.path.join(os.environ.get("TMPDIR", "/tmp"), "ksmith-lit"))
config.excludes = ["inputs"]

ksmith = lit_config.params.get("ksmith")
llvm_bin = lit_config.params.get("llvm_bin", "/usr/lib/llvm-15/bin")
if not ksmith:
    lit_config.fatal("pass --param ksmith=PATH")
config.substitutions.append(("%ksmith", ksmith))
config.substitutions.append(("%examples", os.path.join(os.path.dirname(__file__), "..", "..", "examples")))
config.substitutions.append(("%inputs", os.path.join(os.path.dirname(__file__), "inputs")))
config.environment["PATH"] = llvm_bin + os.pathsep + os.environ.get("PATH", "")
for name in ["HOME", "OCL_ICD_VENDORS", "KSMITH_CACHE_DIR", "POCL_CACHE_DIR"]:
    if name in os.environ:
        config.environment[name] = os.environ[name]
