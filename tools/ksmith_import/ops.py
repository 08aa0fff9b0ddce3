"""The operator table: torch's many spellings of an op (function, method, module) to one op name
(op_tables), and the Handlers, one per op name with torch's parameter names, that make an op's
DSL expressions and statements (mixed into translate.Translator)."""
import math
import operator

from .base import F, Unsupported, nn, torch
from .expr import E, PREC, IntExpr, MaxResult, Scalar, SlotInt, Tensor, binary, call, float_literal, neg, product, size_operand


# --- The op tables: torch's many spellings of one op, to one name ---

UNARY = {  # name -> DSL builtin of the same meaning (PyTorch's definition, the interpreter's float64 one)
    "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "exp2": "exp2", "log": "log",
    "log2": "log2", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "rsqrt": "rsqrt", "abs": "abs",
    "erf": "erf", "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil", "sign": "sign", "silu": "silu",
    "mish": "mish", "selu": "selu", "hardsigmoid": "hardsigmoid", "hardswish": "hardswish",
}
COMPARISONS = {  # name -> (DSL operator, Python's operator); each a Handlers.op_NAME (_add_comparison_handlers)
    "eq": ("==", operator.eq), "ne": ("!=", operator.ne), "lt": ("<", operator.lt), "le": ("<=", operator.le),
    "gt": (">", operator.gt), "ge": (">=", operator.ge),
}
IDENTITY = ["contiguous", "clone", "detach", "identity"]
DROPOUT = ["dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d"]


def op_tables():
    """(functions, methods, modules): call_function targets and call_method names to op names,
    and module types to (op name, a function of the module giving the op's keyword arguments)."""
    functions, methods = {}, {}

    def alias(name, *targets):
        for t in targets:
            if isinstance(t, str):
                methods[t] = name
            elif t is not None:
                functions[t] = name

    def torch_fn(name):
        return getattr(torch, name, None), getattr(F, name, None), getattr(torch.special, name, None), name

    for name in list(UNARY) + ["neg", "reciprocal", "square", "gelu", "softplus", "leaky_relu", "elu",
                               "hardtanh", "relu6", "clamp"]:
        alias(name, *torch_fn(name))
    alias("neg", operator.neg, "negative", torch.negative)
    alias("abs", operator.abs, "absolute", torch.absolute)
    alias("clamp", "clip", torch.clip)
    alias("add", torch.add, "add", operator.add, operator.iadd)
    alias("sub", torch.sub, "sub", operator.sub, operator.isub, torch.subtract, "subtract")
    alias("rsub", torch.rsub)
    alias("mul", torch.mul, "mul", operator.mul, operator.imul, torch.multiply, "multiply")
    alias("div", torch.div, "div", operator.truediv, operator.itruediv, torch.true_divide, "true_divide",
          torch.divide, "divide")
    alias("pow", torch.pow, "pow", operator.pow)
    alias("floordiv", operator.floordiv)
    alias("maximum", torch.maximum, "maximum", torch.fmax)
    for name, (_, op) in COMPARISONS.items():
        alias(name, getattr(torch, name), name, op)
    alias("masked_fill", torch.masked_fill, "masked_fill")
    alias("where", torch.where, "where")
    alias("tril", torch.tril, "tril")
    alias("triu", torch.triu, "triu")
    alias("ones_like", torch.ones_like)
    alias("zeros_like", torch.zeros_like)
    alias("minimum", torch.minimum, "minimum", torch.fmin)
    alias("matmul", torch.matmul, "matmul", operator.matmul, torch.mm, "mm", torch.bmm, "bmm", torch.mv, "mv")
    alias("linear", F.linear)
    alias("addmm", torch.addmm, "addmm")
    for name in ["sum", "mean", "amax", "amin", "prod", "argmax", "argmin", "max", "min", "var", "std",
                 "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod", "transpose", "permute", "unsqueeze", "squeeze", "flatten",
                 "reshape", "t"]:
        alias(name, getattr(torch, name, None), name)
    alias("softmax", F.softmax, torch.special.softmax)
    alias("log_softmax", F.log_softmax, torch.special.log_softmax)
    alias("transpose", "swapaxes", torch.swapaxes, "swapdims", torch.swapdims)
    alias("reshape", "view")
    alias("expand", "expand")
    alias("split", torch.split, "split")
    alias("math_sqrt", math.sqrt)
    alias("chunk", torch.chunk, "chunk")
    alias("to", "to", "type", "float", "half", "bfloat16", "double")
    alias("size", "size")
    for name in IDENTITY:
        alias(name, name)
    for name in DROPOUT:
        alias("dropout", getattr(F, name, None), getattr(torch, name, None))
    alias("sigmoid", F.sigmoid)
    alias("tanh", F.tanh)
    for d in (1, 2, 3):
        alias(f"conv{d}d", getattr(F, f"conv{d}d"))
        alias(f"conv_transpose{d}d", getattr(F, f"conv_transpose{d}d"))
        alias(f"max_pool{d}d", getattr(F, f"max_pool{d}d"), getattr(torch, f"max_pool{d}d", None))
        alias(f"avg_pool{d}d", getattr(F, f"avg_pool{d}d"), getattr(torch, f"avg_pool{d}d", None))
        alias(f"adaptive_avg_pool{d}d", getattr(F, f"adaptive_avg_pool{d}d"))
    alias("layer_norm", F.layer_norm, torch.layer_norm)
    alias("group_norm", F.group_norm, torch.group_norm)
    alias("rms_norm", getattr(F, "rms_norm", None), getattr(torch, "rms_norm", None))
    alias("batch_norm", F.batch_norm)
    alias("cross_entropy", F.cross_entropy)
    alias("nll_loss", F.nll_loss)
    alias("mse_loss", F.mse_loss)
    alias("l1_loss", F.l1_loss)
    alias("getitem", operator.getitem)
    alias("getattr", getattr)

    def attrs(*names, **renamed):
        return lambda m: {**{n: m[n] for n in names}, **{k: m[v] for k, v in renamed.items()}}

    modules = {
        nn.ReLU: ("relu", attrs()), nn.Sigmoid: ("sigmoid", attrs()), nn.Tanh: ("tanh", attrs()),
        nn.SiLU: ("silu", attrs()), nn.Mish: ("mish", attrs()), nn.SELU: ("selu", attrs()),
        nn.Hardsigmoid: ("hardsigmoid", attrs()), nn.Hardswish: ("hardswish", attrs()),
        nn.GELU: ("gelu", attrs("approximate")), nn.LeakyReLU: ("leaky_relu", attrs("negative_slope")),
        nn.ELU: ("elu", attrs("alpha")), nn.Softplus: ("softplus", attrs("beta", "threshold")),
        nn.ReLU6: ("relu6", attrs()), nn.Hardtanh: ("hardtanh", attrs("min_val", "max_val")),
        nn.Softmax: ("softmax", attrs("dim")), nn.LogSoftmax: ("log_softmax", attrs("dim")),
        nn.Identity: ("identity", attrs()), nn.Flatten: ("flatten", attrs("start_dim", "end_dim")),
        nn.Linear: ("linear", attrs("weight", "bias")),
        nn.LayerNorm: ("layer_norm", attrs("normalized_shape", "weight", "bias", "eps")),
        nn.GroupNorm: ("group_norm", attrs("num_groups", "weight", "bias", "eps")),
        nn.CrossEntropyLoss: ("cross_entropy", attrs("weight", "ignore_index", "reduction", "label_smoothing")),
        nn.MSELoss: ("mse_loss", attrs("reduction")), nn.L1Loss: ("l1_loss", attrs("reduction")),
    }
    for cls in (nn.Dropout, getattr(nn, "Dropout1d", None), nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout):
        if cls is not None:
            modules[cls] = ("dropout", lambda m: {"p": m["p"], "training": m.module.training})
    if hasattr(nn, "RMSNorm"):
        modules[nn.RMSNorm] = ("rms_norm", attrs("normalized_shape", "weight", "eps"))
    for d in (1, 2, 3):
        conv = attrs("weight", "bias", "stride", "padding", "dilation", "groups", "padding_mode")
        modules[getattr(nn, f"Conv{d}d")] = (f"conv{d}d", conv)
        modules[getattr(nn, f"ConvTranspose{d}d")] = (f"conv_transpose{d}d", attrs(
            "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation", "padding_mode"))
        modules[getattr(nn, f"MaxPool{d}d")] = (f"max_pool{d}d", attrs(
            "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"))
        modules[getattr(nn, f"AvgPool{d}d")] = (f"avg_pool{d}d", attrs(
            "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", *(
                ["divisor_override"] if d > 1 else [])))
        modules[getattr(nn, f"AdaptiveAvgPool{d}d")] = (f"adaptive_avg_pool{d}d", attrs("output_size"))
        modules[getattr(nn, f"BatchNorm{d}d")] = ("batch_norm_module", lambda m: {"attributes": m})
    return functions, methods, modules


# torch's types as a spec declares them. Float64 is declared f32 (kernelsmith computes in f32).
DTYPES = {torch.float32: "f32", torch.float64: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
          torch.int64: "i64", torch.int32: "i32"} if torch else {}


FLOATS = ("f32", "f16", "bf16")  # a spec's float types


def value_type(spec_type):
    """The type of a value the importer builds from a tensor of spec_type: a 16-bit float is
    stored so but computed in f32, as the spec language does."""
    return "f32" if spec_type in FLOATS else spec_type


class Handlers:
    """The Translator's op handlers: op_NAME(torch's parameters) for each op name of the table, and
    what they share; they build through the Translator's define, store, elementwise and view."""

    def tensor(self, x, what="input"):
        if not isinstance(x, Tensor):
            raise Unsupported(f"its {what} is a {type(x).__name__}, not a tensor")
        return x

    def check_inplace(self, inplace):
        if inplace:
            first = self.node.args[0] if self.node.args else None
            if isinstance(first, torch.fx.Node) and len(first.users) > 1:
                raise Unsupported("in place, on a value other nodes read too")

    def unary(self, fn, input, inplace=False, out=None):
        self.check_inplace(inplace)
        return self.elementwise(lambda a: call(fn, a), self.tensor(input))

    def op_neg(self, input):
        return self.elementwise(neg, self.tensor(input))

    def op_reciprocal(self, input):
        return self.elementwise(lambda a: binary("/", float_literal(1.0), a), self.tensor(input))

    def op_square(self, input):
        return self.op_pow(input, 2)

    def op_gelu(self, input, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise Unsupported(f"approximate={approximate!r}")
        return self.elementwise(lambda a: call("gelu" if approximate == "none" else "gelu_tanh", a), self.tensor(input))

    def op_softplus(self, input, beta=1, threshold=20):
        beta, threshold = float(self.const(beta)), float(self.const(threshold))
        if threshold != 20.0:
            raise Unsupported(f"threshold={threshold} (the DSL's softplus has PyTorch's default, 20)")
        if beta == 1.0:
            return self.elementwise(lambda a: call("softplus", a), self.tensor(input))
        # PyTorch: log1p(exp(beta * x)) / beta, or x where beta * x > threshold: the builtin's threshold on beta * x
        b = float_literal(beta)
        return self.elementwise(lambda a: binary("/", call("softplus", binary("*", b, a)), b), self.tensor(input))

    def op_leaky_relu(self, input, negative_slope=0.01, inplace=False):
        self.check_inplace(inplace)
        return self.elementwise(lambda a: call("leaky_relu", a, float_literal(self.const(negative_slope))),
                                self.tensor(input))

    def op_elu(self, input, alpha=1.0, inplace=False):
        self.check_inplace(inplace)
        return self.elementwise(lambda a: call("elu", a, float_literal(self.const(alpha))), self.tensor(input))

    def op_hardtanh(self, input, min_val=-1.0, max_val=1.0, inplace=False):
        self.check_inplace(inplace)
        return self.elementwise(lambda a: call("hardtanh", a, float_literal(self.const(min_val)),
                                               float_literal(self.const(max_val))), self.tensor(input))

    def op_relu6(self, input, inplace=False):
        return self.op_hardtanh(input, 0.0, 6.0, inplace)

    def op_clamp(self, input, min=None, max=None):
        lo, hi = min, max
        if isinstance(lo, Tensor) or isinstance(hi, Tensor):
            raise Unsupported("tensor bounds")
        x = self.tensor(input)
        if lo is not None and hi is not None:
            return self.elementwise(lambda a, b, c: call("clamp", a, b, c), x, self.scalar(lo), self.scalar(hi))
        if lo is not None:
            return self.elementwise(lambda a, b: call("max", a, b), x, self.scalar(lo))
        if hi is not None:
            return self.elementwise(lambda a, b: call("min", a, b), x, self.scalar(hi))
        raise Unsupported("neither min nor max")

    def scalar_value(self, v):
        return v.value if isinstance(v, Scalar) else float(self.const(v))

    def op_math_sqrt(self, x):
        """math.sqrt of a size (the attention scale 1 / sqrt(head size)) or of a number."""
        if isinstance(x, (SlotInt, IntExpr)) and not self.slot(x).is_const():
            return Scalar(call("sqrt", size_operand(self.slot(x))), math.sqrt(self.const(x)))
        if isinstance(x, Scalar):
            return Scalar(call("sqrt", x.expr), math.sqrt(x.value))
        return math.sqrt(self.const(x))

    def scalar(self, v):
        if isinstance(v, SlotInt):
            return v if self.depends[v.key] else float(v.value)
        return v

    def arith(self, op, a, b):
        if not isinstance(a, (Tensor, float, Scalar)) and not isinstance(b, (Tensor, float, Scalar)) and op in "+-*":
            return {"+": operator.add, "-": operator.sub, "*": operator.mul}[op](self.slot(a), self.slot(b))
        a, b = self.scalar(a), self.scalar(b)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            if not isinstance(a, Scalar) and not isinstance(b, Scalar):
                raise Unsupported("arithmetic on two numbers")
            # A float of sizes: its expression and its value, as a tensor's element would be.
            value = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}[op](
                self.scalar_value(a), self.scalar_value(b))
            return Scalar(binary(op, self.operand(a, [], []), self.operand(b, [], [])), value)
        return self.elementwise(lambda x, y: binary(op, x, y), a, b)

    def op_add(self, input, other, alpha=1, out=None):
        if self.const(alpha) != 1:
            other = self.arith("*", other, float(self.const(alpha)))
        return self.arith("+", input, other)

    def op_sub(self, input, other, alpha=1, out=None):
        if self.const(alpha) != 1:
            other = self.arith("*", other, float(self.const(alpha)))
        return self.arith("-", input, other)

    def op_floordiv(self, input, other):
        if isinstance(input, Tensor) or isinstance(other, Tensor):
            raise Unsupported("floor division of tensors")
        return self.slot(input) // self.slot(other)

    def op_rsub(self, input, other, alpha=1):
        return self.op_sub(other, input, alpha)

    def op_mul(self, input, other, out=None):
        return self.arith("*", input, other)

    def op_div(self, input, other, rounding_mode=None, out=None):
        if rounding_mode is not None:
            raise Unsupported(f"rounding_mode={rounding_mode!r}")
        return self.arith("/", input, other)

    def op_pow(self, input, exponent):
        if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
            e = float(self.const(exponent)) if not isinstance(exponent, float) else exponent
            if e == 1.0:
                return input
            if e == 2.0:  # x * x: exact as pow is, and what a kernel should compute
                return self.elementwise(lambda a: binary("*", a, a), input)
            if e == 0.5:
                return self.elementwise(lambda a: call("sqrt", a), input)
            return self.elementwise(lambda a: call("pow", a, float_literal(e)), input)
        return self.elementwise(lambda a, b: call("pow", a, b), self.scalar(input), self.scalar(exponent))

    def op_maximum(self, input, other):
        return self.elementwise(lambda a, b: call("max", a, b), self.tensor(input), self.tensor(other, "other"))

    def op_minimum(self, input, other):
        return self.elementwise(lambda a, b: call("min", a, b), self.tensor(input), self.tensor(other, "other"))

    # Comparisons, masks and the triangles: a comparison's result is a 'bool' tensor, read
    # as the condition of a select; nothing else takes one.
    def compare(self, op, input, other):
        a, b = self.scalar(input), self.scalar(other)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            raise Unsupported("a comparison of two numbers")
        return self.elementwise(lambda x, y: binary(op, x, y), a, b, dtype="bool")

    def selected(self, cond, a, b):
        """select(cond, a, b) element-wise, broadcast: cond a comparison's result, a and b
        tensors or numbers."""
        c = self.tensor(cond, "condition")
        if c.dtype != "bool":
            raise Unsupported("a condition that is not a comparison's result")
        a, b = self.scalar(a), self.scalar(b)
        for v in (a, b):
            if isinstance(v, Tensor) and v.dtype != "f32":
                raise Unsupported("a select between integer or boolean tensors")
        tensors = [t for t in (c, a, b) if isinstance(t, Tensor)]
        shape = self.broadcast([t.shape for t in tensors])
        hints = next((t.hints for t in tensors if t.rank == len(shape)), None)
        return Tensor(shape, "f32", lambda idx: call("select", *[self.operand(o, idx, shape) for o in (c, a, b)]),
                      "expr", hints=hints)

    def op_masked_fill(self, input, mask, value):
        x = self.tensor(input)
        if isinstance(value, Tensor):
            raise Unsupported("a tensor as the fill value")
        filled = self.selected(mask, float(self.const(value)), x)
        if filled.rank != x.rank:
            raise Unsupported("a mask of more dimensions than the tensor it fills")
        return filled

    def op_where(self, condition, input=None, other=None):
        if input is None or other is None:
            raise Unsupported("torch.where with the condition alone (the indices of its true elements)")
        return self.selected(condition, input, other)

    def triangle(self, input, diagonal, lower):
        x = self.tensor(input)
        if x.rank < 2:
            raise Unsupported(f"a triangle of a tensor of {x.rank} dimension{'s' if x.rank != 1 else ''}")
        k = int(self.const(diagonal))
        zero = "0.0" if x.dtype == "f32" else "0"

        def read(idx):
            row, col = idx[-2], idx[-1]
            cond = E(f"{col.fmt()} {'<=' if lower else '>='} {(row + k).fmt()}", PREC["<="])
            return call("select", cond, x.read(idx), E(zero))

        return Tensor(x.shape, x.dtype, read, "expr", hints=x.hints)

    def op_tril(self, input, diagonal=0):
        return self.triangle(input, diagonal, True)

    def op_triu(self, input, diagonal=0):
        return self.triangle(input, diagonal, False)

    def filled(self, input, value, dtype):
        if dtype is not None and dtype not in DTYPES:
            raise Unsupported(f"dtype={dtype}")
        x = self.tensor(input)
        return Tensor(x.shape, value_type(DTYPES[dtype]) if dtype is not None else x.dtype,
                      lambda idx: float_literal(value) if x.dtype == "f32" else E(str(int(value))), "expr",
                      hints=x.hints)

    def op_ones_like(self, input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        return self.filled(input, 1.0, dtype)

    def op_zeros_like(self, input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        return self.filled(input, 0.0, dtype)

    def op_identity(self, input, *args, **kwargs):
        return self.tensor(input)

    def op_dropout(self, input, p=0.5, training=True, inplace=False):
        if training and float(self.const(p)) != 0.0:
            raise Unsupported("dropout in training mode, which is random (Model.eval() or p=0 make it the identity)")
        return self.tensor(input)

    def op_to(self, input, *args, **kwargs):
        """x.to(dtype), x.float(), x.half(), x.bfloat16(), x.double(), x.type(dtype): the types
        from torch's run of the graph (node.meta["dtype"])."""
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, (str, torch.device)):
                raise Unsupported("a move to a device")
        x = self.tensor(input)
        source = self.node.args[0].meta.get("dtype") if isinstance(self.node.args[0], torch.fx.Node) else None
        target = self.node.meta.get("dtype")
        if source is None or target is None or DTYPES.get(source) == DTYPES.get(target):
            return x
        if value_type(DTYPES.get(source)) != value_type(DTYPES.get(target)):
            raise Unsupported(f"a conversion to {target}")
        source_users = self.node.args[0].users if isinstance(self.node.args[0], torch.fx.Node) else {}
        if all(u.op == "output" for u in self.node.users) and len(source_users) == 1:
            return x  # the output's declared type rounds it (x read nowhere else, where it is unrounded)
        # x.float() of a 16-bit tensor: what it computes is stored in f32; x.to(torch.bfloat16): a
        # value of the format (bf16(x)), as PyTorch's own computes on it from there.
        return self.elementwise(lambda v: call(DTYPES[target], v), x)

    # Views.
    def op_transpose(self, input, dim0, dim1):
        x = self.tensor(input)
        a, b = self.dims([dim0, dim1], x.rank)
        order = list(range(x.rank))
        order[a], order[b] = order[b], order[a]
        return self.permuted(x, order)

    def op_t(self, input):
        x = self.tensor(input)
        return self.permuted(x, list(range(x.rank))[::-1])

    def op_permute(self, input, *dims):
        x = self.tensor(input)
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        order = self.dims(list(dims), x.rank)
        if sorted(order) != list(range(x.rank)):
            raise Unsupported(f"{order} is not a permutation")
        return self.permuted(x, order)

    def permuted(self, x, order):
        def mapping(idx):
            inner = [None] * x.rank
            for out_pos, in_pos in enumerate(order):
                inner[in_pos] = idx[out_pos]
            return inner

        return self.view(x, [x.shape[p] for p in order], mapping, hints=[x.hints[p] for p in order])

    def op_unsqueeze(self, input, dim):
        x = self.tensor(input)
        d = self.const(dim)
        d = d % (x.rank + 1)
        return self.view(x, x.shape[:d] + [IntExpr.of(1)] + x.shape[d:], lambda idx: idx[:d] + idx[d + 1:])

    def op_squeeze(self, input, dim=None):
        x = self.tensor(input)
        dims = self.dims(dim, x.rank) if dim is not None else [p for p, d in enumerate(x.shape) if d.is_const(1)]
        dims = [p for p in dims if x.shape[p].is_const(1)]
        for p in (self.dims(dim, x.rank) if dim is not None else []):
            if not x.shape[p].is_const(1) and x.shape[p].eval(self.size_values) == 1:
                raise Unsupported(f"squeezing dim {p}, of size {x.shape[p]}: 1 here, not at every size")
        keep = [p for p in range(x.rank) if p not in dims]

        def mapping(idx):
            it = iter(idx)
            return [IntExpr.of(0) if p in dims else next(it) for p in range(x.rank)]

        return self.view(x, [x.shape[p] for p in keep], mapping)

    def op_flatten(self, input, start_dim=0, end_dim=-1):
        x = self.tensor(input)
        if x.rank == 0:
            return self.op_reshape(x, [1])
        s, e = self.dims([start_dim, end_dim], x.rank)
        return self.reshaped(x, x.shape[:s] + [product(x.shape[s:e + 1])] + x.shape[e + 1:])

    def op_reshape(self, input, *shape):
        x = self.tensor(input)
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        if any(isinstance(s, torch.dtype) for s in shape):
            raise Unsupported("a view as another dtype")
        values = [self.const(s) for s in shape]
        numel = math.prod(d.eval(self.size_values) for d in x.shape)
        if values.count(-1) > 1:
            raise Unsupported("two -1 dims")
        if -1 in values:
            known = math.prod(v for v in values if v != -1)
            values[values.index(-1)] = numel // known if known else 0
        out = [IntExpr.of(1) if v == 1 else None for v in values]
        groups = self.groups(x.shape, values)
        if groups is None:
            raise Unsupported(f"shape {values} does not hold the {numel} elements")
        for ins, outs in groups:
            merged = product([x.shape[p] for p in ins])
            if len(outs) == 1:
                out[outs[0]] = merged
            elif outs:  # a split: the dims as given, the -1 (or the last) what is left
                free = next((q for q in outs if values[q] == -1 or self.const(shape[q]) == -1), outs[-1])
                for q in outs:
                    if q != free:
                        out[q] = self.slot(shape[q])
                rest = product([out[q] for q in outs if q != free])
                self.require(merged, "%0", rest)
                out[free] = merged // rest
        return self.reshaped(x, out, groups)

    def groups(self, old_shape, new_values):
        old = [(p, d.eval(self.size_values)) for p, d in enumerate(old_shape) if not d.is_const(1)]
        return reshape_groups(old, [(q, v) for q, v in enumerate(new_values) if v != 1])

    def reshaped(self, x, out_shape, groups=None):
        groups = groups or self.groups(x.shape, [d.eval(self.size_values) for d in out_shape])
        exact = all(len(ins) == len(outs) == 1 for ins, outs in groups)

        def mapping(idx):
            inner = [IntExpr.of(0)] * x.rank  # dims of size 1
            for ins, outs in groups:
                flat = IntExpr.of(0)
                for q in outs:
                    flat = flat * out_shape[q] + idx[q]
                for k, p in enumerate(ins):
                    part = flat // product([x.shape[r] for r in ins[k + 1:]])
                    inner[p] = part if k == 0 else part % x.shape[p]
            return inner

        return self.view(x, out_shape, mapping, exact)

    def op_split(self, input, split_size_or_sections=None, dim=0, split_size=None):
        """x.split(n, dim) or torch.split(x, [n0, n1, ...], dim): the pieces as slices of x."""
        x = self.tensor(input)
        d = self.const(dim)
        d = d + x.rank if d < 0 else d
        sizes = split_size if split_size is not None else split_size_or_sections
        if isinstance(sizes, (list, tuple)):
            sizes = [self.slot(n) for n in sizes]
        else:
            n, total = self.const(sizes), self.const(x.shape[d])
            if not isinstance(n, int) or n <= 0:
                raise Unsupported("a split size that is not a positive integer")
            sizes = [self.slot(sizes)] * (-(-total // n))
        pieces, start = [], IntExpr.of(0)
        for n in sizes:
            pieces.append(self.indexed(x, (slice(None),) * d + (slice(start, start + n),)))
            start = start + n
        return tuple(pieces)

    def op_chunk(self, input, chunks, dim=0):
        """x.chunk(c, dim): split into pieces of ceil(size / c)."""
        x = self.tensor(input)
        d = self.const(dim)
        d = d + x.rank if d < 0 else d
        c, total = self.const(chunks), self.const(x.shape[d])
        if not isinstance(c, int) or c <= 0:
            raise Unsupported("a chunk count that is not a positive integer")
        if total % c:
            raise Unsupported(f"chunks of a dim of {total} into {c}: the importer splits into equal pieces only")
        return self.op_split(x, x.shape[d] // c, d)

    def op_expand(self, input, *sizes):
        x = self.tensor(input)
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = sizes[0]
        lead = len(sizes) - x.rank
        shape = []
        for q, s in enumerate(sizes):
            own = x.shape[q - lead] if q >= lead else None
            shape.append(own if self.const(s) == -1 or own is not None and not own.is_const(1) else self.slot(s))

        def mapping(idx):
            return [IntExpr.of(0) if d.is_const(1) and not shape[lead + p].is_const(1) else idx[lead + p]
                    for p, d in enumerate(x.shape)]

        return self.view(x, shape, mapping, exact=False)

    def op_size(self, input, dim=None):
        x = self.tensor(input)
        if dim is None:
            return list(x.shape)
        return x.shape[self.dims(dim, x.rank)[0]]

    def op_getattr(self, obj, attr):
        if isinstance(obj, MaxResult) and attr in ("values", "indices"):
            return obj.get(attr)
        if isinstance(obj, Tensor):
            if attr == "shape":
                return list(obj.shape)
            if attr == "T":
                return self.permuted(obj, list(range(obj.rank))[::-1])
            if attr == "mT":
                order = list(range(obj.rank))
                order[-1], order[-2] = order[-2], order[-1]
                return self.permuted(obj, order)
        raise Unsupported(f"attribute {attr}")

    def op_getitem(self, obj, index):
        if isinstance(obj, MaxResult):
            return obj.get(self.const(index))
        if isinstance(obj, (list, tuple)):
            return obj[self.const(index)]
        if isinstance(obj, Tensor):
            return self.indexed(obj, index if isinstance(index, tuple) else (index,))
        raise Unsupported(f"indexing a {type(obj).__name__}")

    def indexed(self, x, index):
        """x[index] for integers, slices with constant bounds, None and one Ellipsis."""
        if sum(i is Ellipsis for i in index) > 1:
            raise Unsupported("two Ellipses")
        used = sum(1 for i in index if i is not None and i is not Ellipsis)
        if used > x.rank:
            raise Unsupported("more indices than dims")
        if Ellipsis in index:
            at = index.index(Ellipsis)
            index = index[:at] + (slice(None),) * (x.rank - used) + index[at + 1:]
        else:
            index = tuple(index) + (slice(None),) * (x.rank - used)
        shape, plan, p = [], [], 0  # plan: per input dim, ('at', IntExpr) or ('slice', out_pos, start, step)
        for i in index:
            if i is None:
                shape.append(IntExpr.of(1))
                continue
            dim = x.shape[p]
            if isinstance(i, slice):
                step = self.const(i.step) if i.step is not None else 1
                if not isinstance(step, int) or step <= 0:
                    raise Unsupported("a slice step that is not a positive integer")
                start = self.bound(i.start, dim, 0)
                stop = self.bound(i.stop, dim, None)
                length = (stop - start + (step - 1)) // step
                if length.eval(self.size_values) <= 0:
                    raise Unsupported("an empty slice")
                plan.append(("slice", len(shape), start, step))
                shape.append(length)
            elif isinstance(i, (SlotInt, int, IntExpr)):
                v = self.const(i) if not isinstance(i, IntExpr) else None
                at = self.slot(i) if v is None or v >= 0 else dim + v
                plan.append(("at", at))
            else:
                raise Unsupported(f"an index of type {type(i).__name__}")
            p += 1

        def mapping(idx):
            return [entry[1] if entry[0] == "at" else entry[2] + idx[entry[1]] * entry[3] for entry in plan]

        return self.view(x, shape, mapping, exact=all(e[0] == "slice" and e[2].is_const(0) and e[3] == 1 for e in plan))

    def bound(self, v, dim, default):
        if v is None:
            return IntExpr.of(default) if default is not None else dim
        value = self.const(v)
        expr = self.slot(v) if value >= 0 else dim + value
        if value >= 0 and value >= dim.eval(self.size_values):
            return dim
        return expr

    # Reductions.
    def reduction(self, kind, input, dim=None, keepdim=False, dtype=None, scale=None):
        x = self.tensor(input)
        if dtype is not None and value_type(DTYPES.get(dtype)) != "f32":
            raise Unsupported(f"dtype={dtype}")
        dims = self.dims(dim, x.rank)
        if not dims and x.rank:
            return x
        keep = bool(self.const(keepdim))
        count = product([x.shape[p] for p in dims])
        if scale == "mean":
            body = lambda full: binary("/", x.read(full), size_operand(count))  # noqa: E731
        else:
            body = x.read
        hint = {"sum": "total", "max": "max_value", "min": "min_value", "prod": "product", "argmax": "index",
                "argmin": "index"}[kind] if scale != "mean" else "mean"
        return self.reduce(hint, x, dims, kind, body, keep, "i64" if kind.startswith("arg") else "f32")

    def op_sum(self, input, dim=None, keepdim=False, dtype=None):
        return self.reduction("sum", input, dim, keepdim, dtype)

    def op_mean(self, input, dim=None, keepdim=False, dtype=None):
        return self.reduction("sum", input, dim, keepdim, dtype, scale="mean")

    def op_prod(self, input, dim=None, keepdim=False, dtype=None):
        return self.reduction("prod", input, dim, keepdim, dtype)

    def op_amax(self, input, dim=(), keepdim=False):
        return self.reduction("max", input, dim if dim != () else None, keepdim)

    def op_amin(self, input, dim=(), keepdim=False):
        return self.reduction("min", input, dim if dim != () else None, keepdim)

    def op_argmax(self, input, dim=None, keepdim=False):
        return self.reduction("argmax", input, dim, keepdim)

    def op_argmin(self, input, dim=None, keepdim=False):
        return self.reduction("argmin", input, dim, keepdim)

    def extremum(self, kind, input, dim=None, keepdim=False, other=None):
        if isinstance(dim, Tensor) or isinstance(other, Tensor):  # the element-wise form
            return self.elementwise(lambda a, b: call(kind, a, b), self.tensor(input),
                                    dim if isinstance(dim, Tensor) else other)
        if dim is None:
            return self.reduction(kind, input)
        return MaxResult(lambda: self.reduction(kind, input, dim, keepdim),
                         lambda: self.reduction("arg" + kind, input, dim, keepdim))

    def op_max(self, input, dim=None, keepdim=False, other=None):
        return self.extremum("max", input, dim, keepdim, other)

    def op_min(self, input, dim=None, keepdim=False, other=None):
        return self.extremum("min", input, dim, keepdim, other)

    def variance(self, input, dim, unbiased, keepdim, correction):
        x = self.store(self.tensor(input), "x")
        dims = self.dims(dim, x.rank)
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        count = product([x.shape[p] for p in dims])
        mean = self.reduce("mean", x, dims, "sum", lambda full: binary("/", x.read(full), size_operand(count)), True)

        def body(full):
            d = binary("-", x.read(full), mean.read([IntExpr.of(0) if p in dims else i for p, i in enumerate(full)]))
            return binary("/", binary("*", d, d), size_operand(count - self.const(correction)))

        return self.reduce("var", x, dims, "sum", body, bool(self.const(keepdim)))

    def op_var(self, input, dim=None, unbiased=None, keepdim=False, correction=None):
        return self.variance(input, dim, unbiased, keepdim, correction)

    def op_std(self, input, dim=None, unbiased=None, keepdim=False, correction=None):
        return self.elementwise(lambda a: call("sqrt", a), self.variance(input, dim, unbiased, keepdim, correction))

    def op_logsumexp(self, input, dim, keepdim=False):
        x = self.store(self.tensor(input), "x")
        dims = self.dims(dim, x.rank)
        row_max, total = self.max_and_total(x, dims)
        stat = lambda t: lambda full: t.read([i for p, i in enumerate(full) if p not in dims])  # noqa: E731
        shape = [IntExpr.of(1) if p in dims else x.shape[p] for p in range(x.rank)]
        out = Tensor(shape, "f32", lambda idx: binary("+", call("log", stat(total)(idx)), stat(row_max)(idx)), "expr")
        return out if self.const(keepdim) else self.op_squeeze(out, dims)

    def cumulative(self, kind, input, dim):
        """torch.cumsum/cumprod: a reduction over `k: 0..i + 1` along dim (a running total, which the
        search scans)."""
        x = self.tensor(input)
        d = self.dims(dim, x.rank)[0]

        def body(idx, ridx):
            full = list(idx)
            full[d] = ridx[0]
            return x.read(full)

        return self.define("y", x.shape, body, reduce=(kind, [x.shape[d]]), var_hints=x.hints,
                           ranges=[lambda idx: (IntExpr.of(0), idx[d] + 1)])

    def op_cumsum(self, input, dim, dtype=None, out=None):
        return self.cumulative("sum", input, dim)

    def op_cumprod(self, input, dim, dtype=None, out=None):
        return self.cumulative("prod", input, dim)

    def max_and_total(self, x, dims):
        """row_max = max over dims, total = sum of exp(x - row_max): the stable softmax's statistics."""
        row_max = self.reduce("row_max", x, dims, "max", x.read)
        at = self.outer_read(row_max, dims)
        total = self.reduce("total", x, dims, "sum", lambda full: call("exp", binary("-", x.read(full), at(full))))
        return row_max, total

    def softmax_dim(self, x, dim):
        if dim is None:
            raise Unsupported("softmax without dim (PyTorch's implicit choice is deprecated)")
        return self.dims(dim, x.rank)[0]

    def op_softmax(self, input, dim=None, _stacklevel=3, dtype=None):
        x = self.store(self.tensor(input), "x")
        d = self.softmax_dim(x, dim)
        row_max = self.reduce("row_max", x, [d], "max", x.read)
        at_max = self.outer_read(row_max, [d])
        e = self.define("e", x.shape, lambda idx, _: call("exp", binary("-", x.read(idx), at_max(idx))),
                        var_hints=x.hints)
        total = self.reduce("total", e, [d], "sum", e.read)
        return Tensor(x.shape, "f32", lambda idx: binary("/", e.read(idx), self.outer_read(total, [d])(idx)), "expr",
                      hints=e.hints)

    def op_log_softmax(self, input, dim=None, _stacklevel=3, dtype=None):
        x = self.store(self.tensor(input), "x")
        d = self.softmax_dim(x, dim)
        row_max, total = self.max_and_total(x, [d])
        at_max, at_total = self.outer_read(row_max, [d]), self.outer_read(total, [d])
        return Tensor(x.shape, "f32", lambda idx: binary("-", binary("-", x.read(idx), at_max(idx)),
                                                         call("log", at_total(idx))), "expr", hints=x.hints)

    # Contractions.
    def op_matmul(self, input, other, out=None):
        a, b = self.tensor(input), self.tensor(other, "other")
        if a.rank == 0 or b.rank == 0:
            raise Unsupported("a matmul of a 0-dim tensor")
        a_vec, b_vec = a.rank == 1, b.rank == 1
        k_a = a.shape[-1]
        k_b = b.shape[0] if b_vec else b.shape[-2]
        self.require(k_a, "==", k_b)
        batch = self.broadcast([a.shape[:-2], b.shape[:-2]])
        m = [] if a_vec else [a.shape[-2]]
        n = [] if b_vec else [b.shape[-1]]
        shape = batch + m + n
        own = [d.single_name() for d in m + n + [k_a]]  # m, n, k from the sizes where they are three
        own = [name.lower() if name and len(name) <= 3 else None for name in own]
        if None in own or len(set(own)) < len(own):
            own = (["i"] if m else []) + (["j"] if n else []) + ["k"]
        hints = [None] * len(batch) + own[:-1]

        def body(idx, ridx):
            bi, rest = idx[:len(batch)], idx[len(batch):]
            i = rest[0] if m else None
            j = rest[-1] if n else None
            k = ridx[0]
            a_idx = [k] if a_vec else self.batch_index(a.shape[:-2], batch, bi) + [i, k]
            b_idx = [k] if b_vec else self.batch_index(b.shape[:-2], batch, bi) + [k, j]
            return binary("*", a.read(a_idx), b.read(b_idx))

        return self.define(self.node.name, shape, body, reduce=("sum", [k_a]), var_hints=hints, rvar_hints=own[-1:])

    def batch_index(self, own, batch, idx):
        lead = len(batch) - len(own)
        return [IntExpr.of(0) if d.is_const(1) and not batch[lead + p].is_const(1) else idx[lead + p]
                for p, d in enumerate(own)]

    def op_linear(self, input, weight, bias=None):
        x, w = self.tensor(input), self.tensor(weight, "weight")
        if w.rank != 2:
            raise Unsupported("a weight that is not 2-D")
        acc = self.op_matmul(x, self.permuted(w, [1, 0]))
        return self.arith("+", acc, bias) if bias is not None else acc

    def op_addmm(self, input, mat1, mat2, beta=1, alpha=1):
        product_ = self.op_matmul(mat1, mat2)
        if float(self.const(alpha)) != 1.0:
            product_ = self.arith("*", product_, float(self.const(alpha)))
        if float(self.const(beta)) != 1.0:
            input = self.arith("*", input, float(self.const(beta)))
        return self.arith("+", input, product_)

    # Convolutions and pooling: nd spatial dims after (N, C).
    def tuple_arg(self, v, nd, what):
        v = list(v) if isinstance(v, (tuple, list)) else [v] * nd
        if len(v) == 1:
            v = v * nd
        if len(v) != nd:
            raise Unsupported(f"{what} {v} for {nd} spatial dims")
        return [self.slot(x) for x in v]

    def conv_nd(self, nd, input, weight, bias, stride, padding, dilation, groups, padding_mode="zeros"):
        x, w = self.tensor(input), self.tensor(weight, "weight")
        if padding_mode != "zeros":
            raise Unsupported(f"padding_mode={padding_mode!r}")
        if x.rank != nd + 2:
            raise Unsupported(f"an input of rank {x.rank} (the importer takes batched input, rank {nd + 2})")
        n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
        o, c_per_group, kernel = w.shape[0], w.shape[1], w.shape[2:]
        stride, dilation = self.tuple_arg(stride, nd, "stride"), self.tuple_arg(dilation, nd, "dilation")
        g = self.slot(groups)
        if isinstance(padding, str):
            if padding == "valid":
                pad = [IntExpr.of(0)] * nd
            elif padding == "same":
                if not all(s.is_const(1) for s in stride):
                    raise Unsupported("padding='same' with a stride")
                for d, k in zip(dilation, kernel):  # PyTorch puts the odd one on the right
                    if (d * (k - 1)).eval(self.size_values) % 2:
                        raise Unsupported("padding='same' with an even kernel (asymmetric padding)")
                pad = [(d * (k - 1)) // 2 for d, k in zip(dilation, kernel)]
            else:
                raise Unsupported(f"padding={padding!r}")
        else:
            pad = self.tuple_arg(padding, nd, "padding")
        if not g.is_const(1):
            self.require(c, "%0", g)
            self.require(o, "%0", g)
        if c_per_group != c // g:  # else implied by C % G == 0
            self.require(c_per_group * g, "==", c)
        out = [(h + 2 * p - d * (k - 1) - 1) // s + 1 for h, p, d, k, s in zip(spatial, pad, dilation, kernel, stride)]
        padded = not all(p.is_const(0) for p in pad)
        if padded:
            x = self.store(x, "x")
        o_per_group = o // g

        def body(idx, ridx):
            bn, bo, outs = idx[0], idx[1], idx[2:]
            ks = ridx[-nd:]
            cin = ridx[0] if not c_per_group.is_const(1) else IntExpr.of(0)
            channel = cin if g.is_const(1) else bo // o_per_group * c_per_group + cin
            at = [oi * s + k * d - p for oi, s, k, d, p in zip(outs, stride, ks, dilation, pad)]
            read = x.read([bn, channel] + at, float_literal(0.0)) if padded else x.read([bn, channel] + at)
            return binary("*", read, w.read([bo, cin] + ks))

        names = spatial_names(nd)
        reduce = ([c_per_group] if not c_per_group.is_const(1) else []) + kernel
        rhints = (["c"] if not c_per_group.is_const(1) else []) + ["k" + s for s in names]
        y = self.define(self.node.name, [n, o] + out, body, reduce=("sum", reduce),
                        var_hints=["n", "o"] + ["o" + s for s in names], rvar_hints=rhints)
        return self.channel_bias(y, bias)

    def channel_bias(self, y, bias):
        if bias is None:
            return y
        b = self.tensor(bias, "bias")
        return Tensor(y.shape, "f32", lambda idx: binary("+", y.read(idx), b.read([idx[1]])), "expr", hints=y.hints)

    def conv_transpose_nd(self, nd, input, weight, bias, stride, padding, output_padding, groups, dilation,
                          padding_mode="zeros"):
        x, w = self.store(self.tensor(input), "x"), self.tensor(weight, "weight")
        if padding_mode != "zeros":
            raise Unsupported(f"padding_mode={padding_mode!r}")
        if x.rank != nd + 2:
            raise Unsupported(f"an input of rank {x.rank} (the importer takes batched input, rank {nd + 2})")
        n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
        o_per_group, kernel = w.shape[1], w.shape[2:]
        stride, pad = self.tuple_arg(stride, nd, "stride"), self.tuple_arg(padding, nd, "padding")
        extra, dilation = self.tuple_arg(output_padding, nd, "output_padding"), self.tuple_arg(dilation, nd, "dilation")
        g = self.slot(groups)
        if not g.is_const(1):
            self.require(c, "%0", g)
        self.require(w.shape[0], "==", c)
        o = o_per_group * g
        c_per_group = c // g
        out = [(h - 1) * s - 2 * p + d * (k - 1) + e + 1
               for h, s, p, d, k, e in zip(spatial, stride, pad, dilation, kernel, extra)]

        def body(idx, ridx):
            bn, bo, outs = idx[0], idx[1], idx[2:]
            ks = ridx[-nd:]
            cin = ridx[0] if not c_per_group.is_const(1) else IntExpr.of(0)
            channel = cin if g.is_const(1) else bo // o_per_group * c_per_group + cin
            oc = bo if g.is_const(1) else bo % o_per_group
            taps = [oi + p - k * d for oi, p, k, d in zip(outs, pad, ks, dilation)]
            read = x.read([bn, channel] + [t // s for t, s in zip(taps, stride)], float_literal(0.0))
            strided = [(t, s) for t, s in zip(taps, stride) if not s.is_const(1)]
            if strided:  # only the taps on the stride grid reach this output
                tests = [E(f"{t % s} == 0", PREC["=="]) for t, s in strided]
                cond = tests[0]
                for test in tests[1:]:
                    cond = binary("&&", cond, test)
                read = call("select", cond, read, float_literal(0.0))
            return binary("*", read, w.read([channel, oc] + ks))

        names = spatial_names(nd)
        reduce = ([c_per_group] if not c_per_group.is_const(1) else []) + kernel
        rhints = (["c"] if not c_per_group.is_const(1) else []) + ["k" + s for s in names]
        y = self.define(self.node.name, [n, o] + out, body, reduce=("sum", reduce),
                        var_hints=["n", "o"] + ["o" + s for s in names], rvar_hints=rhints)
        return self.channel_bias(y, bias)

    def pool_nd(self, nd, kind, input, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad=True,
                divisor_override=None):
        x = self.tensor(input)
        if self.const(ceil_mode):
            raise Unsupported("ceil_mode=True")
        if x.rank < nd + 1:
            raise Unsupported(f"an input of rank {x.rank}")
        kernel = self.tuple_arg(kernel_size, nd, "kernel_size")
        stride = kernel if stride is None or stride == [] or stride == () else self.tuple_arg(stride, nd, "stride")
        pad = self.tuple_arg(padding, nd, "padding")
        dilation = self.tuple_arg(dilation, nd, "dilation")
        lead, spatial = x.shape[:-nd], x.shape[-nd:]
        padded = not all(p.is_const(0) for p in pad)
        if kind == "avg" and padded and not count_include_pad:
            raise Unsupported("count_include_pad=False with padding")
        if padded:
            x = self.store(x, "x")
        out = [(h + 2 * p - d * (k - 1) - 1) // s + 1 for h, p, d, k, s in zip(spatial, pad, dilation, kernel, stride)]
        divisor = self.slot(divisor_override) if divisor_override is not None else product(kernel)

        def body(idx, ridx):
            at = idx[:len(lead)] + [oi * s + k * d - p for oi, s, k, d, p in zip(idx[len(lead):], stride, ridx,
                                                                                dilation, pad)]
            if kind == "max":
                return x.read(at, float_literal(-math.inf)) if padded else x.read(at)
            read = x.read(at, float_literal(0.0)) if padded else x.read(at)
            return binary("/", read, size_operand(divisor))

        names = spatial_names(nd)
        return self.define(self.node.name, lead + out, body, reduce=("max" if kind == "max" else "sum", kernel),
                           var_hints=[None] * len(lead) + ["o" + s for s in names],
                           rvar_hints=["k" + s for s in names])

    def adaptive_avg_pool_nd(self, nd, input, output_size):
        x = self.tensor(input)
        sizes = output_size if isinstance(output_size, (tuple, list)) else [output_size] * nd
        if any(s is not None and self.const(s) != 1 for s in sizes):
            raise Unsupported("an output size other than 1 (global average pooling)")
        return self.reduction("sum", x, list(range(x.rank - nd, x.rank)), True, scale="mean")

    # Normalisations.
    def normalised(self, x, mean, var, eps, stat_index, weight, bias, weight_index):
        """(x - mean) * rsqrt(var + eps) * weight + bias, element-wise."""
        def read(idx):
            at = stat_index(idx)
            e = binary("*", binary("-", x.read(idx), mean.read(at)),
                       call("rsqrt", binary("+", var.read(at), float_literal(self.const(eps)))))
            if weight is not None:
                e = binary("*", e, weight.read(weight_index(idx)))
            if bias is not None:
                e = binary("+", e, bias.read(weight_index(idx)))
            return e

        return Tensor(x.shape, "f32", read, "expr", hints=x.hints)

    def moments(self, x, dims):
        """mean and (biased) variance of x over dims."""
        count = product([x.shape[p] for p in dims])
        mean = self.reduce("mean", x, dims, "sum", lambda full: binary("/", x.read(full), size_operand(count)))
        at = self.outer_read(mean, dims)

        def body(full):
            d = binary("-", x.read(full), at(full))
            return binary("/", binary("*", d, d), size_operand(count))

        return mean, self.reduce("var", x, dims, "sum", body)

    def op_layer_norm(self, input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
        x = self.store(self.tensor(input), "x")
        k = len(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else 1
        dims = list(range(x.rank - k, x.rank))
        mean, var = self.moments(x, dims)
        return self.normalised(x, mean, var, eps, lambda idx: idx[:x.rank - k], self.opt(weight), self.opt(bias),
                               lambda idx: idx[x.rank - k:])

    def opt(self, t):
        return None if t is None else self.tensor(t, "weight")

    def op_rms_norm(self, input, normalized_shape, weight=None, eps=None):
        x = self.store(self.tensor(input), "x")
        eps = torch.finfo(torch.float32).eps if eps is None else self.const(eps)
        k = len(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else 1
        dims = list(range(x.rank - k, x.rank))
        count = product([x.shape[p] for p in dims])
        ms = self.reduce("mean_square", x, dims, "sum",
                         lambda full: binary("/", binary("*", x.read(full), x.read(full)), size_operand(count)))
        w = self.opt(weight)

        def read(idx):
            e = binary("*", x.read(idx), call("rsqrt", binary("+", ms.read(idx[:x.rank - k]), float_literal(eps))))
            return binary("*", e, w.read(idx[x.rank - k:])) if w is not None else e

        return Tensor(x.shape, "f32", read, "expr")

    def op_group_norm(self, input, num_groups, weight=None, bias=None, eps=1e-5):
        x = self.store(self.tensor(input), "x")
        if x.rank < 2:
            raise Unsupported("an input of rank below 2")
        n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
        g = self.slot(num_groups)
        self.require(c, "%0", g)
        per = c // g
        count = product([per] + spatial)

        def grouped(idx, ridx):  # idx: n, g; ridx: channel in group, spatial
            return x.read([idx[0], idx[1] * per + ridx[0]] + ridx[1:])

        hints = ["c"] + [None] * len(spatial)
        mean = self.define("mean", [n, g], lambda idx, ridx: binary("/", grouped(idx, ridx), size_operand(count)),
                           reduce=("sum", [per] + spatial), var_hints=["n", "g"], rvar_hints=hints)

        def var_body(idx, ridx):
            d = binary("-", grouped(idx, ridx), mean.read(idx))
            return binary("/", binary("*", d, d), size_operand(count))

        var = self.define("var", [n, g], var_body, reduce=("sum", [per] + spatial), var_hints=["n", "g"],
                          rvar_hints=hints)
        return self.normalised(x, mean, var, eps, lambda idx: [idx[0], idx[1] // per], self.opt(weight),
                               self.opt(bias), lambda idx: [idx[1]])

    def op_batch_norm(self, input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                      eps=1e-5):
        x = self.store(self.tensor(input), "x")
        dims = [p for p in range(x.rank) if p != 1]
        if training:
            mean, var = self.moments(x, dims)
        else:
            mean, var = self.tensor(running_mean, "running_mean"), self.tensor(running_var, "running_var")
        return self.normalised(x, mean, var, eps, lambda idx: [idx[1]], self.opt(weight), self.opt(bias),
                               lambda idx: [idx[1]])

    def op_batch_norm_module(self, input, attributes):
        """nn.BatchNorm*d: the batch's statistics in training mode (KernelBench's Model is never put in
        eval mode) or without running statistics, the running ones otherwise."""
        module = attributes.module
        if module.training or not module.track_running_stats:
            return self.op_batch_norm(input, None, None, attributes["weight"], attributes["bias"], True, 0.1,
                                      module.eps)
        return self.op_batch_norm(input, attributes["running_mean"], attributes["running_var"],
                                  attributes["weight"], attributes["bias"], False, 0.1, module.eps)

    # Losses.
    def loss_reduction(self, per_element, reduction, hint="loss"):
        if reduction == "none":
            return per_element
        if reduction not in ("mean", "sum"):
            raise Unsupported(f"reduction={reduction!r}")
        return self.reduction("sum", per_element, None, scale="mean" if reduction == "mean" else None)

    def op_cross_entropy(self, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                         reduction="mean", label_smoothing=0.0):
        x, t = self.store(self.tensor(input), "logits"), self.tensor(target, "target")
        if weight is not None or float(label_smoothing) != 0.0 or size_average is not None or reduce is not None:
            raise Unsupported("class weights, label smoothing and the legacy size_average/reduce")
        row_max, total = self.max_and_total(x, [1])
        picked = self.class_pick(x, t)
        per_row = Tensor([x.shape[0]], "f32", lambda idx: binary("-", binary("+", call("log", total.read(idx)),
                                                                              row_max.read(idx)), picked(idx)), "expr")
        return self.loss_reduction(per_row, reduction)

    def class_pick(self, x, t):
        """x[n, target[n]]: target, an integer input, gets the range 0..C that makes the read legal."""
        if x.rank != 2 or t.rank != 1 or t.kind != "stored" or t.dtype == "f32" or \
                t.name not in [i[0] for i in self.inputs]:
            raise Unsupported("logits other than (N, C), or a target other than an integer input of shape (N,)")
        c = x.shape[1]
        if self.input_ranges.get(t.name, c) != c:
            raise Unsupported(f"input {t.name} indexes dims of different sizes")
        self.input_ranges[t.name] = c
        return lambda idx: x.read([idx[0], E(t.read([idx[0]]).text)])

    def op_nll_loss(self, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                    reduction="mean"):
        x, t = self.store(self.tensor(input), "log_probs"), self.tensor(target, "target")
        if weight is not None or size_average is not None or reduce is not None:
            raise Unsupported("class weights and the legacy size_average/reduce")
        picked = self.class_pick(x, t)
        return self.loss_reduction(Tensor([x.shape[0]], "f32", lambda idx: neg(picked(idx)), "expr"), reduction)

    def op_mse_loss(self, input, target, size_average=None, reduce=None, reduction="mean"):
        diff = self.arith("-", self.tensor(input), self.tensor(target, "target"))
        return self.loss_reduction(self.elementwise(lambda a: binary("*", a, a), diff), reduction)

    def op_l1_loss(self, input, target, size_average=None, reduce=None, reduction="mean"):
        diff = self.arith("-", self.tensor(input), self.tensor(target, "target"))
        return self.loss_reduction(self.elementwise(lambda a: call("abs", a), diff), reduction)


def _add_nd_handlers():
    for nd in (1, 2, 3):
        def conv(self, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros",
                 nd=nd):
            return self.conv_nd(nd, input, weight, bias, stride, padding, dilation, groups, padding_mode)

        def conv_transpose(self, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                           dilation=1, padding_mode="zeros", nd=nd):
            return self.conv_transpose_nd(nd, input, weight, bias, stride, padding, output_padding, groups, dilation,
                                          padding_mode)

        def max_pool(self, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                     return_indices=False, nd=nd):
            if return_indices:
                raise Unsupported("return_indices=True")
            return self.pool_nd(nd, "max", input, kernel_size, stride, padding, dilation, ceil_mode)

        def avg_pool(self, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                     divisor_override=None, nd=nd):
            return self.pool_nd(nd, "avg", input, kernel_size, stride, padding, 1, ceil_mode, count_include_pad,
                                divisor_override)

        def adaptive(self, input, output_size, nd=nd):
            return self.adaptive_avg_pool_nd(nd, input, output_size)

        setattr(Handlers, f"op_conv{nd}d", conv)
        setattr(Handlers, f"op_conv_transpose{nd}d", conv_transpose)
        setattr(Handlers, f"op_max_pool{nd}d", max_pool)
        setattr(Handlers, f"op_avg_pool{nd}d", avg_pool)
        setattr(Handlers, f"op_adaptive_avg_pool{nd}d", adaptive)


_add_nd_handlers()


def _add_comparison_handlers():
    for name, (op, _) in COMPARISONS.items():
        def compare(self, input, other, op=op):
            return self.compare(op, input, other)

        setattr(Handlers, f"op_{name}", compare)


_add_comparison_handlers()


def spatial_names(nd):
    return {1: ["w"], 2: ["h", "w"], 3: ["d", "h", "w"]}[nd]


def reshape_groups(old, new):
    """old, new: [(position, value)] of the dims that are not 1. Pairs runs of old and new dims
    of equal products: [(old positions, new positions)], or None when the counts differ."""
    if math.prod(v for _, v in old) != math.prod(v for _, v in new):
        return None
    groups, i, j = [], 0, 0
    while i < len(old) or j < len(new):
        ins, outs, a, b = [], [], 1, 1
        while not (ins or outs) or a != b:
            if (a <= b or j == len(new)) and i < len(old):
                ins.append(old[i][0])
                a *= old[i][1]
                i += 1
            elif j < len(new):
                outs.append(new[j][0])
                b *= new[j][1]
                j += 1
            else:
                break
        groups.append((ins, outs))
    return groups
