"""ksmith import: a PyTorch module in KernelBench's form to a .ks spec and its peer entry.

Usage: python3 tools/ksmith_import MODEL.py [-o SPEC.ks] [--peer PEER.json] [--name NAME] [--check-sizes N=V,...]
(or `python3 -m ksmith_import` with tools/ on the path; `ksmith import` runs the first).

MODEL.py defines Model, get_inputs() and get_init_inputs(), and its sizes as module-level
integer constants (`N = 256`). Run with Debian's Python and python3-torch (`ksmith import`
does); stdlib and torch only. Errors are the user's: `error: MODEL.py: ...`, exit status 1,
nothing written.

Algorithm:
 1. Load MODEL.py; its module-level integer constants are the candidate sizes. Build
    Model(*get_init_inputs()), trace it with torch.fx, propagate shapes with get_inputs().
    (tracing.py)
 2. Name the integers the computation is built from (input and parameter dimensions, the
    integer arguments of the graph's calls, the integer attributes of its submodules):
    load the module again with one size changed at a time (the source re-run, so that
    globals derived from it follow), see which integers change, and fit the simplest
    expression of those sizes that gives every observed value. Value matching alone
    would confuse two sizes that are both 128. (sizes.py)
 3. Translate node by node. Element-wise ops stay expressions, inlined where read;
    reductions, contractions, convolutions and pooling are statements; an expression read
    by several nodes is stored. Derived dimensions are each op's own shape rule as size
    expressions (a conv's `(H + 2 * P - K) / S + 1`), checked against torch's shapes.
    (translate.py, ops.py, expr.py)
 4. Choose check sizes: smaller sizes at which the module rebuilds to the same graph, with
    every fitted expression and every shape rule still right, and the `require`s met.
    (sizes.py)
 5. Write the spec and the peer entry (what `bench/torch_peer.py` needs to build and time
    the module at any sizes), each through a temporary file and a rename. (spec.py, peer.py;
    cli.py runs the steps in order)

Modules (README.md says more), each importing only those before it: base, expr, tracing,
sizes, ops, translate, spec, peer, cli. What callers outside use is re-exported here:
load_module and build_model (bench/torch_peer.py, tests/check_import.py), named_tensors,
import_model, main, ImportFailure.
"""
from .base import ImportFailure, Unsupported
from .cli import import_model, main
from .tracing import build_model, load_module, named_tensors

__all__ = ["ImportFailure", "Unsupported", "build_model", "import_model", "load_module", "main", "named_tensors"]
