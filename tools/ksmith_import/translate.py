"""The translation: the Translator walks the fx graph node by node (translate, translate_node),
gives each op's handler (ops.Handlers) its arguments, and holds what the spec is made of: its
inputs, statements, names, requires and outputs."""
import inspect
import re

from .base import ImportFailure, Unsupported, nn, torch
from .expr import E, IntExpr, Scalar, SlotInt, Tensor, float_literal, size_operand
from .ops import DTYPES, IDENTITY, UNARY, Handlers, op_tables, value_type
from .sizes import SizeDiscovery
from .tracing import Build, named_tensors, op_text, read_model_source, size_constants


RESERVED = {
    "kernel", "where", "check", "require", "in", "else", "inf", "nan", "select", "min", "max", "sum", "prod", "argmax",
    "argmin", "f32", "f16", "bf16", "i32", "i64", "bool", "true", "false", "graph", "sizes", "input", "output", "temp", "program",
    "for", "let", "block", "allocate", "barrier", "if", "reads", "writes", "split", "tile", "reorder", "fuse", "bind",
    "unroll", "inline", "cross_reduce", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "tanh",
    "erf", "sin", "cos", "abs", "floor", "ceil", "sign", "pow", "clamp", "sigmoid", "relu", "leaky_relu", "gelu",
    "gelu_tanh", "softplus", "silu", "mish", "elu", "selu", "hardtanh", "hardsigmoid", "hardswish"}
VAR_POOL = ["i", "j", "k", "l", "m", "p", "q", "r", "s", "t", "u", "v"]


def identifier(text):
    text = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text) or "t"
    return "t_" + text if text[0].isdigit() else text


class Statement:
    def __init__(self, name, lhs, rhs):
        self.name, self.lhs, self.rhs = name, lhs, rhs  # lhs: [(var, extent, inferable)]


class Translator(SizeDiscovery, Handlers):
    """MODEL.py's translation: built (steps 1 and 2) when made, translated (step 3) by translate();
    the sizes' discovery (sizes.SizeDiscovery) and the op handlers (ops.Handlers) mixed in."""

    def __init__(self, path, check_sizes=None):
        self.path = path
        self.tree = read_model_source(path)
        self.constants = size_constants(self.tree)
        self.base = Build(path, self.tree, None)
        try:
            self.base.propagate_shapes()
        except ImportFailure:  # an op without a meta kernel, or a forward that fails: said by a real run
            self.base = Build(path, self.tree, None, meta=False)
            self.base.propagate_shapes()
        self.given_check = check_sizes or {}
        self.functions, self.methods, self.modules = op_tables()
        self.measure_dependence()
        self.resolved = {}  # slot key -> IntExpr
        self.statements = []
        self.inputs = []  # (name, dtype, shape, origin)
        self.input_ranges = {}
        self.requires = []  # (IntExpr, op, IntExpr)
        self.node_shapes = {}  # node name -> [IntExpr], checked against torch's at every size tried
        self.var_names = set()
        self.renamed = {}  # intermediate -> the output it became
        self.taken = RESERVED | set(self.constants)

    # Names.
    def fresh(self, hint, used):
        hint = identifier(hint)
        name, n = hint, 1
        while name in used:
            name, n = f"{hint}_{n}" if len(hint) > 2 else f"{hint}{n}", n + 1
        return name

    def tensor_name(self, hint):
        name = self.fresh(hint, self.taken | self.var_names)
        self.taken.add(name)
        return name

    # Statements.
    def define(self, hint, shape, body, dtype="f32", reduce=None, var_hints=None, rvar_hints=None, ranges=None):
        """name[vars] = [reduce(rvars)] body(idx, ridx); a stored Tensor. reduce: (kind, extents); ranges: for
        each reduction variable, None or a function of idx giving its range (lo, hi): `k: lo..hi`."""
        shape = [IntExpr.of(d) for d in shape]
        name = self.tensor_name(hint)
        used = set(self.taken) | {name}
        kind, rshape = reduce or (None, [])
        rshape = [IntExpr.of(d) for d in rshape]

        def pick(extent, hint):
            single = extent.single_name()
            hint = hint or (single.lower() if single and len(single) <= 3 else None)
            for candidate in ([hint] if hint else []) + VAR_POOL:
                if candidate not in used:
                    break
            else:
                candidate = self.fresh(hint or "i", used)
            used.add(candidate)
            self.var_names.add(candidate)
            return candidate

        variables = [pick(d, (var_hints or [None] * len(shape))[i]) for i, d in enumerate(shape)]
        rvariables = [pick(d, (rvar_hints or [None] * len(rshape))[i]) for i, d in enumerate(rshape)]
        self.bare = {}
        self.statement_vars = set(variables) | set(rvariables)
        body_expr = body([IntExpr.of(v) for v in variables], [IntExpr.of(v) for v in rvariables])
        inferable = lambda v, d: self.bare.get(v) == {d}  # noqa: E731
        rhs = body_expr.text
        if kind:
            index = [IntExpr.of(v) for v in variables]
            spans = [r(index) if r else None for r in (ranges or [None] * len(rvariables))]
            rvars = ", ".join(f"{v}: {span[0]}..{span[1]}" if span else v if inferable(v, d) else f"{v}: {d}"
                              for v, d, span in zip(rvariables, rshape, spans))
            rhs = f"{kind}({rvars}) {rhs}"
        self.statements.append(Statement(name, [(v, d, inferable(v, d)) for v, d in zip(variables, shape)], rhs))
        self.statement_vars = set()
        return self.stored(name, shape, dtype, variables)

    def stored(self, name, shape, dtype, hints=None):
        shape = list(shape)

        def read(idx, default=None):
            name_now = self.renamed.get(name, name)
            for position, i in enumerate(idx):
                v = i.single_name() if isinstance(i, IntExpr) else None
                if v in self.statement_vars:
                    self.bare.setdefault(v, set()).add(shape[position])
            text = f"{name_now}[{', '.join(str(i) for i in idx)}]"
            return E(f"({text} else {default.text})") if default is not None else E(text)

        return Tensor(shape, dtype, read, "stored", name=name, hints=hints)

    def store(self, x, hint):
        """x as a stored tensor (or an exact view of one), defining it if it is an expression."""
        if x.kind == "stored" or x.kind == "view" and x.exact:
            return x
        return self.define(hint, x.shape, lambda idx, _: x.read(idx), dtype=x.dtype, var_hints=x.hints)

    def require(self, a, op, b):
        a, b = IntExpr.of(a), IntExpr.of(b)
        if op == "%0":
            r = a % b
            if r.is_const():
                if r.const:
                    raise Unsupported(f"{a} is not a multiple of {b}")
                return
            requirement = (r, "==", IntExpr.of(0))
        elif a != b:
            if (a - b).is_const():
                raise Unsupported(f"{a} and {b} differ")
            requirement = (a, op, b)
        else:
            return
        if requirement not in self.requires:
            self.requires.append(requirement)

    # Element-wise.
    def broadcast(self, shapes):
        rank = max((len(s) for s in shapes), default=0)
        out = []
        for p in range(rank):
            dims = [s[len(s) - rank + p] for s in shapes if len(s) - rank + p >= 0]
            wide = [d for d in dims if not d.is_const(1)]
            for d in wide[1:]:
                self.require(d, "==", wide[0])
            out.append(wide[0] if wide else IntExpr.of(1))
        return out

    def operand(self, x, idx, shape):
        """x's element at idx of the broadcast shape: a Tensor, a Python number or a size."""
        if isinstance(x, Tensor):
            lead = len(shape) - x.rank
            return x.read([IntExpr.of(0) if d.is_const(1) and not shape[lead + p].is_const(1) else idx[lead + p]
                           for p, d in enumerate(x.shape)])
        if isinstance(x, (SlotInt, IntExpr)):
            return size_operand(self.slot(x))
        if isinstance(x, Scalar):
            return x.expr
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise Unsupported(f"an operand of type {type(x).__name__}")
        return float_literal(x)

    def elementwise(self, fn, *operands, dtype="f32"):
        tensors = [o for o in operands if isinstance(o, Tensor)]
        shape = self.broadcast([t.shape for t in tensors])
        for t in tensors:
            if t.dtype != "f32" and dtype == "f32":
                raise Unsupported("integer or boolean tensors in arithmetic")
        hints = next((t.hints for t in tensors if t.rank == len(shape)), None)
        return Tensor(shape, dtype, lambda idx: fn(*[self.operand(o, idx, shape) for o in operands]), "expr",
                      hints=hints)

    def view(self, x, shape, mapping, exact=True, hints=None):
        """A tensor whose element idx is x's element mapping(idx)."""
        kind = "view" if x.kind in ("stored", "view") else "expr"

        def read(idx, default=None):
            inner = mapping(idx)
            return x.read(inner, default) if default is not None else x.read(inner)

        return Tensor(shape, x.dtype, read, kind, exact=exact and x.exact, hints=hints)

    # Reductions over dims of x: the statement's variables are x's other dims (or 1 where kept).
    def reduce(self, hint, x, dims, kind, body, keepdim=False, dtype="f32"):
        dims = sorted(set(dims))
        outer = [p for p in range(x.rank) if p not in dims]
        shape = [IntExpr.of(1) if p in dims else x.shape[p] for p in range(x.rank)] if keepdim else \
            [x.shape[p] for p in outer]

        def full(idx, ridx):
            it, rt = iter(idx), iter(ridx)
            out = []
            for p in range(x.rank):
                if p in dims:
                    out.append(next(rt))
                    if keepdim:
                        next(it)
                else:
                    out.append(next(it))
            return out

        return self.define(hint, shape, lambda idx, ridx: body(full(idx, ridx)), dtype=dtype,
                           reduce=(kind, [x.shape[p] for p in dims]))

    def outer_read(self, stat, dims):
        """A reduction result, read at a full index of its input (the reduced dims dropped)."""
        return lambda full: stat.read([i for p, i in enumerate(full) if p not in dims])

    def dims(self, dim, rank, what="dim"):
        if dim is None:
            return list(range(rank))
        dim = self.const(dim)
        values = [self.const(d) for d in dim] if isinstance(dim, (list, tuple)) else [dim]
        out = []
        for d in values:
            if not isinstance(d, int) or not -max(rank, 1) <= d < max(rank, 1):
                raise Unsupported(f"{what} {d} for a tensor of rank {rank}")
            out.append(d % rank if rank else 0)
        return out

    # The graph.
    def translate(self, name):
        graph = self.base.graph_module.graph
        nodes = list(graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        output = [n for n in nodes if n.op == "output"][0]
        returned = output.args[0]
        returned = list(returned) if isinstance(returned, (tuple, list)) else [returned]
        for r in returned:
            if not isinstance(r, torch.fx.Node):
                raise ImportFailure(f"Model.forward returns a {type(r).__name__}, not a tensor")
        self.kernel = identifier(name)
        self.taken.add(self.kernel)
        for n in placeholders:
            self.taken.add(n.target)
        self.output_names = []
        for i, r in enumerate(returned):
            self.output_names.append(self.fresh("y" if len(returned) == 1 else f"y{i}",
                                                self.taken | {p.target for p in placeholders}))
            self.taken.add(self.output_names[-1])
        self.returned = returned
        self.env = {}
        for i, n in enumerate(placeholders):
            self.env[n] = self.add_input(n.target, self.base.inputs[i],
                                         [("input", i, d) for d in range(self.base.inputs[i].dim())],
                                         {"forward_argument": i})
        self.params = {}
        for n in nodes:
            if n.op in ("placeholder", "output"):
                continue
            try:
                value = self.translate_node(n)
                if isinstance(value, Tensor):
                    if "shape" in n.meta:
                        self.node_shapes[n.name] = value.shape
                        if [d.eval(self.size_values) for d in value.shape] != n.meta["shape"]:
                            raise Unsupported(f"the importer's shape {value.shape} is not torch's "
                                              f"{n.meta['shape']} (a bug of the importer)")
                    if value.kind == "expr" and len(n.users) > 1:
                        value = self.store(value, n.name)
            except Unsupported as e:
                raise ImportFailure(f"node {n.name} (op {op_text(n, self.base.graph_module)}): {e}")
            self.env[n] = value
        self.outputs = []
        for i, r in enumerate(returned):
            value = self.env[r]
            out_name = self.output_names[i]
            if not isinstance(value, Tensor):
                raise ImportFailure(f"Model.forward returns {r.name}, which is not a tensor")
            defined = {st.name for st in self.statements}
            if value.kind == "stored" and self.renamed.get(value.name, value.name) in defined and \
                    value.name not in self.renamed:
                self.rename(value.name, out_name)  # the node's own statement defines the output
            else:
                self.define(out_name, value.shape, lambda idx, _: value.read(idx), dtype=value.dtype,
                            var_hints=value.hints)
                self.statements[-1].name = out_name
            # Declared as torch's result is typed (a half module's outputs are f16 or bf16).
            declared = DTYPES.get(r.meta.get("dtype")) if value.dtype == "f32" else value.dtype
            self.outputs.append((out_name, declared or value.dtype, value.shape))

    def rename(self, old, new):
        """Tensor old is now called new, in its statement and every read (a read is always `name[`)."""
        self.renamed[old] = new
        for st in self.statements:
            if st.name == old:
                st.name = new
            st.rhs = re.sub(rf"\b{re.escape(old)}\[", new + "[", st.rhs)

    def param(self, qualname):
        """A parameter or buffer, an input of the spec from its first use on (inputs in the order read)."""
        if qualname not in self.params:
            tensors = dict(named_tensors(self.base.model))
            if qualname not in tensors:
                made = qualname.startswith("_tensor_constant")  # what fx makes of torch.ones(...) in forward
                raise Unsupported("a tensor made inside forward; make it a parameter or a buffer of the module"
                                  if made else f"{qualname} is not a parameter or a buffer")
            p = tensors[qualname]
            kind = "parameter" if isinstance(p, nn.Parameter) else "buffer"
            self.params[qualname] = self.add_input(self.fresh(qualname.replace(".", "_"), self.taken), p,
                                                   [("param", qualname, d) for d in range(p.dim())], {kind: qualname})
        return self.params[qualname]

    def add_input(self, name, tensor, keys, origin):
        if tensor.dtype not in DTYPES:
            raise ImportFailure(f"input {name} has dtype {tensor.dtype}; the importer takes floating-point, int64 "
                                f"and int32 tensors")
        shape = [self.slot(SlotInt(v, k)) for v, k in zip(tensor.shape, keys)]
        self.taken.add(name)
        self.inputs.append((name, DTYPES[tensor.dtype], shape, origin))
        return self.stored(name, shape, value_type(DTYPES[tensor.dtype]))

    def resolve(self, node, value, path):
        if isinstance(value, torch.fx.Node):
            return self.env[value]
        if type(value) is int:
            return SlotInt(value, ("arg", node.name, path))
        if isinstance(value, (tuple, list)):
            return type(value)(self.resolve(node, v, path + (i,)) for i, v in enumerate(value))
        if isinstance(value, dict):
            return {k: self.resolve(node, v, path + (k,)) for k, v in value.items()}
        if isinstance(value, slice):
            start, stop, step = self.resolve(node, (value.start, value.stop, value.step), path + ("slice",))
            return slice(start, stop, step)
        return value

    def translate_node(self, n):
        if n.op == "get_attr":
            made = getattr(self.base.graph_module, n.target, None)  # fx's copy of torch.tensor(2.0) made in forward
            if n.target.startswith("_tensor_constant") and isinstance(made, torch.Tensor) and made.numel() == 1 \
                    and not made.is_meta:
                return Tensor([], "f32", lambda idx: float_literal(made.item()), "expr") if made.dim() == 0 else \
                    Tensor([IntExpr.of(1)] * made.dim(), "f32", lambda idx: float_literal(made.item()), "expr")
            return self.param(n.target)
        args = self.resolve(n, tuple(n.args), ("args",))
        kwargs = self.resolve(n, dict(n.kwargs), ("kwargs",))
        if n.op == "call_function":
            op = self.functions.get(n.target)
        elif n.op == "call_method":
            op = self.methods.get(n.target)
        else:
            module = self.base.graph_module.get_submodule(n.target)
            entry = self.modules.get(type(module))
            if entry is None:
                raise Unsupported("the importer does not translate this module (README.md, \"Importing a PyTorch "
                                  "module\", lists the operators it does)")
            op, attrs = entry
            getter = _AttrGetter(self, n, module)
            kwargs = dict(attrs(getter), **kwargs)
        if op is None:
            raise Unsupported("the importer does not translate this operator (README.md, \"Importing a PyTorch "
                              "module\", lists the operators it does)")
        self.node = n
        if op in UNARY:
            return self.unary(UNARY[op], *args, **kwargs)
        handler = getattr(self, "op_" + ("identity" if op in IDENTITY else op))
        try:
            bound = inspect.signature(handler).bind(*args, **kwargs)
        except TypeError as e:
            raise Unsupported(f"arguments the importer does not take ({e})")
        return handler(*bound.args, **bound.kwargs)


class _AttrGetter:
    """A module's attributes as the translator sees them: tensors as the spec's inputs, integers
    as slots (their dependence on the sizes measured)."""

    def __init__(self, translator, node, module):
        self.translator, self.node, self.module = translator, node, module

    def __getitem__(self, attr):
        value = getattr(self.module, attr, None)
        if value is None:
            return None
        if isinstance(value, torch.Tensor):
            return self.translator.param(f"{self.node.target}.{attr}")

        def wrap(v, path):
            if type(v) is int:
                return SlotInt(v, ("attr", self.node.name, attr, path))
            if isinstance(v, (tuple, list)):
                return type(v)(wrap(x, path + (i,)) for i, x in enumerate(v))
            return v

        return wrap(value, ())

