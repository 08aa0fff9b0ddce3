"""Spec writing: the spec's text (spec_text: the kernel, its sizes and check sizes, requires and
statements, under a comment from the module's docstring: module_doc) and writing a file
through a temporary and a rename (write_atomically)."""
import inspect
import os
import re
import tempfile

from .base import ImportFailure, nn
from .ops import FLOATS
from .sizes import choose_check_sizes, format_sizes


def spec_text(tr, source_label, docstring):
    """The spec's text, and its sizes: the module's constants that it names. docstring: the
    lines of the module's description."""
    def tensor_decl(name, dtype, shape):
        return f"{name}: {dtype}[{', '.join(str(d) for d in shape)}]"

    params = []
    for name, dtype, shape, _ in tr.inputs:
        decl = tensor_decl(name, dtype, shape)
        if name in tr.input_ranges:
            decl += f" in 0..{tr.input_ranges[name].fmt(2)}"
        elif dtype not in FLOATS:
            raise ImportFailure(f"input {name} is an integer tensor, but no operator says its range (the importer "
                                f"infers one for the targets of cross_entropy and nll_loss)")
        params.append(decl)
    outs = [tensor_decl(n, d, s) for n, d, s in tr.outputs]
    out_text = outs[0] if len(outs) == 1 else f"({', '.join(outs)})"
    head = f"kernel {tr.kernel}({', '.join(params)}) -> {out_text}"
    if len(head) > 110:
        head = f"kernel {tr.kernel}({', '.join(params)})\n    -> {out_text}"
    requires = [f"  require {', '.join(f'{a} {op} {b}' for a, op, b in tr.requires)}"] if tr.requires else []
    body = ["{"]
    for st in tr.statements:
        output = st.name in tr.output_names
        lhs = ", ".join(v if output or inferable else f"{v}: {d}" for v, d, inferable in st.lhs)
        body.append(f"  {st.name}[{lhs}] = {st.rhs}")
    body.append("}")
    named = set(re.findall(r"\w+", "\n".join([head] + requires + body)))
    sizes = [name for name in tr.constants if name in named]
    clauses = []
    if sizes:
        clauses.append(f"  where {format_sizes({name: tr.size_values[name] for name in sizes})}")
        clauses.append(f"  check {format_sizes(choose_check_sizes(tr, sizes))}")
    lines = [f"# Imported by `ksmith import` from {source_label}; import it again rather than edit it."]
    lines += [f"# {line}".rstrip() for line in docstring]
    return "\n".join(lines + [head] + clauses + requires + body) + "\n", sizes


def module_doc(tr):
    """What the module says it is, as the spec's comment: the file's docstring (which may name its
    KernelBench problem, by which `ksmith bench` groups), else Model's; its first paragraph."""
    model_doc = inspect.getdoc(tr.base.model)
    if model_doc == inspect.getdoc(nn.Module):
        model_doc = None
    return (inspect.cleandoc(tr.base.namespace.get("__doc__") or "") or model_doc or "").split("\n\n")[0]


def write_atomically(path, text):
    if os.path.exists(path) and not os.path.isfile(path):
        # /dev/null, /dev/stdout, a pipe: written to as they are, never replaced by a rename.
        with open(path, "w") as f:
            f.write(text)
        return
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".ksmith_import-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
