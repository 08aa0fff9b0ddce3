#!/usr/bin/env python3
"""ksmith import: a PyTorch module in KernelBench's form to a .ks spec and its peer entry.

Usage: ksmith_import.py MODEL.py [-o SPEC.ks] [--peer PEER.json] [--name NAME] [--check-sizes N=V,...]

MODEL.py defines Model, get_inputs() and get_init_inputs(), and its sizes as module-level
integer constants (`N = 256`). Run with Debian's Python and python3-torch (`ksmith import`
does); stdlib and torch only. Errors are the user's: `error: MODEL.py: ...`, exit status 1,
nothing written.

Algorithm:
 1. Load MODEL.py; its module-level integer constants are the candidate sizes. Build
    Model(*get_init_inputs()), trace it with torch.fx, propagate shapes with get_inputs().
 2. Name the integers the computation is built from (input and parameter dimensions, the
    integer arguments of the graph's calls, the integer attributes of its submodules):
    load the module again with one size changed at a time (the source re-run, so that
    globals derived from it follow), see which integers change, and fit the simplest
    expression of those sizes that gives every observed value. Value matching alone
    would confuse two sizes that are both 128.
 3. Translate node by node. Element-wise ops stay expressions, inlined where read;
    reductions, contractions, convolutions and pooling are statements; an expression read
    by several nodes is stored. Derived dimensions are each op's own shape rule as size
    expressions (a conv's `(H + 2 * P - K) / S + 1`), checked against torch's shapes.
 4. Choose check sizes: smaller sizes at which the module rebuilds to the same graph, with
    every fitted expression and every shape rule still right, and the `require`s met.
 5. Write the spec and the peer entry (what `bench/torch_peer.py` needs to build and time
    the module at any sizes), each through a temporary file and a rename.
"""
import argparse
import ast
import contextlib
import inspect
import json
import math
import operator
import os
import re
import sys
import tempfile

try:
    import torch
    import torch.fx
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as missing:  # said by main(), as an error rather than a traceback
    torch = None
    TORCH_MISSING = missing


class ImportFailure(Exception):
    """The user's error: printed as `error: MODEL.py: message`, exit status 1."""


class Unsupported(Exception):
    """A node the importer cannot translate: why, to be prefixed with the node and its op."""


# --- Integer expressions: sizes, loop variables, and what shapes and indices make of them ---

class IntExpr:
    """const + sum of coeff * term, where a term is a name (a size or a loop variable) or
    ('*' | '/' | '%', IntExpr, IntExpr). Folded as it is built, so that one quantity written
    two ways compares and prints the same (`H - K + 1`, not `(H + 2 * 0 - 1 * (K - 1) - 1) / 1 + 1`).
    Division and modulo round toward negative infinity, as Python's and the DSL's do."""
    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const=0):
        self.terms = {t: c for t, c in (terms or {}).items() if c != 0}
        self.const = const

    @staticmethod
    def of(x):
        if isinstance(x, IntExpr):
            return x
        if isinstance(x, str):
            return IntExpr({x: 1})
        return IntExpr(None, int(x))

    def key(self):
        return (tuple(sorted(((term_key(t), c) for t, c in self.terms.items()), key=repr)), self.const)

    def __eq__(self, other):
        return isinstance(other, IntExpr) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def is_const(self, value=None):
        return not self.terms and (value is None or self.const == value)

    def single_name(self):
        """The name this is, if it is exactly one name."""
        if self.const == 0 and len(self.terms) == 1:
            (t, c), = self.terms.items()
            if c == 1 and isinstance(t, str):
                return t
        return None

    def names(self):
        found = set()
        for t in self.terms:
            if isinstance(t, str):
                found.add(t)
            else:
                found |= t[1].names() | t[2].names()
        return found

    def eval(self, env):
        total = self.const
        for t, c in self.terms.items():
            if isinstance(t, str):
                total += c * env[t]
            else:
                a, b = t[1].eval(env), t[2].eval(env)
                total += c * {"*": lambda: a * b, "/": lambda: a // b, "%": lambda: a % b}[t[0]]()
        return total

    def __add__(self, other):
        other = IntExpr.of(other)
        terms = dict(self.terms)
        for t, c in other.terms.items():
            terms[t] = terms.get(t, 0) + c
        return IntExpr(terms, self.const + other.const)

    __radd__ = __add__

    def __neg__(self):
        return IntExpr({t: -c for t, c in self.terms.items()}, -self.const)

    def __sub__(self, other):
        return self + (-IntExpr.of(other))

    def __rsub__(self, other):
        return IntExpr.of(other) - self

    def scaled(self, k):
        return IntExpr({t: c * k for t, c in self.terms.items()}, self.const * k)

    def __mul__(self, other):
        other = IntExpr.of(other)
        if other.is_const():
            return self.scaled(other.const)
        if self.is_const():
            return other.scaled(self.const)
        return IntExpr({("*", self, other): 1})

    __rmul__ = __mul__

    def __floordiv__(self, other):
        other = IntExpr.of(other)
        if other.is_const(1):
            return self
        if self.is_const() and other.is_const():
            return IntExpr.of(self.const // other.const)
        if self == other:
            return IntExpr.of(1)
        if self.is_const(0):
            return self
        if other.is_const() and other.const > 0 and all(c % other.const == 0 for c in self.terms.values()) \
                and self.const % other.const == 0:
            return IntExpr({t: c // other.const for t, c in self.terms.items()}, self.const // other.const)
        if len(self.terms) == 1 and self.const == 0:  # (a * b) / b is a
            (t, c), = self.terms.items()
            if c == 1 and not isinstance(t, str) and t[0] == "*" and t[2] == other:
                return t[1]
        return IntExpr({("/", self, other): 1})

    def __mod__(self, other):
        other = IntExpr.of(other)
        if other.is_const(1) or self == other or self.is_const(0):
            return IntExpr.of(0)
        if self.is_const() and other.is_const():
            return IntExpr.of(self.const % other.const)
        if other.is_const() and other.const > 0 and all(c % other.const == 0 for c in self.terms.values()):
            return IntExpr.of(self.const % other.const)
        return IntExpr({("%", self, other): 1})

    def fmt(self, context=0):
        """DSL text. context 0: anywhere; 1: the left operand of * / %; 2: an operand that
        must be atomic (right of * / %, a float expression's operand)."""
        parts = []
        for t, c in self.terms.items():
            text = term_text(t, c != 1 and c != -1)
            mag = abs(c)
            parts.append(("-" if c < 0 else "+", text if mag == 1 else f"{mag} * {text}"))
        if self.const or not parts:
            const = ("-" if self.const < 0 else "+", str(abs(self.const)))
            parts = [const] + parts if parts and parts[0][0] == "-" and self.const > 0 else parts + [const]
        text = ("-" if parts[0][0] == "-" else "") + parts[0][1]
        for sign, p in parts[1:]:
            text += f" {sign} {p}"
        atomic = len(parts) == 1 and parts[0][0] == "+" and (self.single_name() or self.is_const())
        if context == 2 and not atomic or context == 1 and (len(parts) > 1 or parts[0][0] == "-"):
            return f"({text})"
        return text

    def __str__(self):
        return self.fmt(0)

    __repr__ = __str__


def term_key(t):
    if isinstance(t, str):
        return t
    if t[0] == "*":  # a product's factors as a multiset: C * D is D * C
        return ("*", tuple(sorted((f.key() for f in factors(t)), key=repr)))
    return (t[0], t[1].key(), t[2].key())


def factors(t):
    """The factors of a product term, nested products flattened."""
    out = []
    for e in (t[1], t[2]):
        if e.const == 0 and len(e.terms) == 1 and list(e.terms.values()) == [1] and \
                not isinstance(list(e.terms)[0], str) and list(e.terms)[0][0] == "*":
            out += factors(list(e.terms)[0])
        else:
            out.append(e)
    return out


def term_text(t, scaled):
    if isinstance(t, str):
        return t
    text = f"{t[1].fmt(1)} {t[0]} {t[2].fmt(2)}"
    return f"({text})" if scaled else text


def product(exprs):
    total = IntExpr.of(1)
    for e in exprs:
        total = total * e
    return total


# --- Float expressions of the DSL, with the parentheses their precedence needs ---

PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}
ATOM = 7


class E:
    """A DSL expression's text and its precedence (ATOM for reads, calls and literals)."""
    __slots__ = ("text", "prec")

    def __init__(self, text, prec=ATOM):
        self.text, self.prec = text, prec

    def __str__(self):
        return self.text


def paren(e):
    return f"({e.text})"


def binary(op, a, b):
    """a op b, evaluated in that order: the right operand is bracketed at equal precedence
    (floats do not reassociate), a leading minus always."""
    p = PREC[op]
    left = paren(a) if a.prec < p else a.text
    right = paren(b) if b.prec <= p or b.text.startswith("-") else b.text
    return E(f"{left} {op} {right}", p)


def call(fn, *args):
    return E(f"{fn}({', '.join(a.text for a in args)})")


def neg(a):
    return E("-" + (paren(a) if a.prec < 6 or a.text.startswith("-") else a.text), 6)


def float_literal(v):
    v = float(v)
    if math.isnan(v):
        return E("nan")
    if math.isinf(v):
        return E("inf") if v > 0 else E("-inf", 6)
    text = repr(v).replace("e+", "e")
    return E(text, 6 if v < 0 else ATOM)


def size_operand(x):
    """An integer (a size expression or a constant) where a float is read."""
    x = IntExpr.of(x)
    return float_literal(x.const) if x.is_const() else E(x.fmt(2))


# --- Values a node can have ---

class Tensor:
    """A tensor value: its shape (IntExprs), dtype ('f32', 'i64', 'i32'), and read(idx) giving
    the DSL expression of one element. kind: 'stored' (a named tensor of the spec), 'view' (an
    index map over a stored tensor; exact when each index maps to one index unchanged or
    permuted, so that an out-of-bounds read stays out of bounds), or 'expr' (element-wise,
    inlined where read)."""

    def __init__(self, shape, dtype, read, kind, name=None, exact=True, hints=None):
        self.shape, self.dtype, self.read, self.kind, self.name, self.exact = list(shape), dtype, read, kind, name, exact
        self.hints = hints or [None] * len(self.shape)  # a loop variable's name for each dim, where one is known

    @property
    def rank(self):
        return len(self.shape)


class SlotInt:
    """An integer of the model (an argument, an attribute, a dimension) with the key by
    which its dependence on the sizes was measured."""
    __slots__ = ("value", "key")

    def __init__(self, value, key):
        self.value, self.key = value, key


class MaxResult:
    """torch.max(x, dim) and friends: (values, indices), each made when first read."""

    def __init__(self, values, indices):
        self.make = {0: values, 1: indices, "values": values, "indices": indices}
        self.made = {}

    def get(self, which):
        key = {"values": 0, "indices": 1}.get(which, which)
        if key not in self.made:
            self.made[key] = self.make[key]()
        return self.made[key]


# --- Loading the module, with some sizes changed ---

def size_constants(tree):
    """Top-level `NAME = <integer constant expression>` assignments (`H = W = 128` and
    `D, H, W = 16, 32, 32` too): name -> value, in order."""
    found = {}
    for stmt in tree.body:
        for name, value in constant_assignments(stmt):
            found[name] = value
    return found


def constant_assignments(stmt):
    """[(name, value)] of the integer constants one top-level statement assigns, else []."""
    if not isinstance(stmt, ast.Assign):
        return []
    if all(isinstance(t, ast.Name) for t in stmt.targets):
        value = constant_int(stmt.value)
        return [] if value is None else [(t.id, value) for t in stmt.targets]
    if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple) and \
            len(stmt.targets[0].elts) == len(stmt.value.elts) and all(isinstance(t, ast.Name) for t in stmt.targets[0].elts):
        values = [constant_int(v) for v in stmt.value.elts]
        if None not in values:
            return [(t.id, v) for t, v in zip(stmt.targets[0].elts, values)]
    return []


def constant_int(node):
    """The value of an integer expression of literals only (`4096`, `2 ** 10`), else None."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = constant_int(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Pow):
        a, b = constant_int(node.left), constant_int(node.right)
        if a is None or b is None or isinstance(node.op, ast.Pow) and not 0 <= b <= 64 or \
                isinstance(node.op, ast.FloorDiv) and b == 0:
            return None
        return {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
                ast.Pow: operator.pow}[type(node.op)](a, b)
    return None


def read_model_source(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ImportFailure(f"cannot read it: {e.strerror}")
    try:
        return ast.parse(text, filename=path)
    except SyntaxError as e:
        raise ImportFailure(f"line {e.lineno}: syntax error: {e.msg}")


def load_module(path, sizes=None, tree=None):
    """Run MODEL.py afresh with the given sizes in place of its own constants (later globals
    computed from them follow) and return its namespace, which must hold Model, get_inputs and
    get_init_inputs. Also what bench/torch_peer.py builds its models with."""
    tree = tree or read_model_source(path)
    sizes = sizes or {}
    constants = size_constants(tree)
    unknown = [name for name in sizes if name not in constants]
    if unknown:
        raise ImportFailure(f"has no size {', '.join(unknown)} (its sizes: {', '.join(constants) or 'none'})")
    tree = ast.parse(ast.unparse(tree)) if sizes else tree  # a copy to edit
    body = []
    for stmt in tree.body:  # `H = W = 128` with H changed: `H = 129`, then `W = 128`
        assigned = constant_assignments(stmt)
        for name, value in assigned:
            value = sizes.get(name, value)
            body.append(ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], ast.Constant(int(value))), stmt))
        if not assigned:
            body.append(stmt)
    tree.body = body
    ast.fix_missing_locations(tree)
    namespace = {"__name__": "ksmith_model", "__file__": os.path.abspath(path)}
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # its own imports of neighbours
    try:
        exec(compile(tree, path, "exec"), namespace)
    except Exception as e:
        raise ImportFailure(f"running it raised {describe(e)}")
    finally:
        sys.path.pop(0)
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if not callable(namespace.get(name))]
    if missing:
        raise ImportFailure(f"defines no {', '.join(missing)}; a module in KernelBench's form defines Model (an "
                            f"nn.Module), get_inputs() and get_init_inputs()")
    return namespace


def build_model(namespace):
    """Model(*get_init_inputs()) and get_inputs(), as KernelBench builds them."""
    try:
        model = namespace["Model"](*namespace["get_init_inputs"]())
    except Exception as e:
        raise ImportFailure(f"Model(*get_init_inputs()) raised {describe(e)}")
    if not isinstance(model, nn.Module):
        raise ImportFailure("Model(*get_init_inputs()) is not an nn.Module")
    try:
        inputs = list(namespace["get_inputs"]())
    except Exception as e:
        raise ImportFailure(f"get_inputs() raised {describe(e)}")
    return model, inputs


def describe(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


FACTORIES = ["randn", "rand", "randint", "randperm", "zeros", "ones", "empty", "full", "arange", "linspace", "eye"]


@contextlib.contextmanager
def factories_on_meta():
    """torch's tensor factories make meta tensors (shapes, no data) unless told a device: a
    module at KernelBench's sizes (gigabytes) is built and its shapes propagated in no time
    and no memory."""
    saved = {name: getattr(torch, name) for name in FACTORIES}

    def on_meta(factory):
        def make(*args, **kwargs):
            if kwargs.get("device") is None:
                kwargs["device"] = "meta"
            return factory(*args, **kwargs)
        return make

    try:
        for name, factory in saved.items():
            setattr(torch, name, on_meta(factory))
        yield
    finally:
        for name, factory in saved.items():
            setattr(torch, name, factory)


class Build:
    """The module at one set of sizes: model, inputs, its fx graph, and every integer slot.
    meta: tensors without data (what the analysis needs), else real ones."""

    def __init__(self, path, tree, sizes, meta=True):
        self.meta = meta
        with factories_on_meta() if meta else contextlib.nullcontext():
            self.namespace = load_module(path, sizes, tree)
            self.model, self.inputs = build_model(self.namespace)
        if meta:  # anything made another way
            self.model = self.model.to("meta")
            self.inputs = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in self.inputs]
        for i, x in enumerate(self.inputs):
            if not isinstance(x, torch.Tensor):
                raise ImportFailure(f"get_inputs()[{i}] is a {type(x).__name__}, not a tensor; pass sizes and "
                                    f"options to Model through get_init_inputs()")
        try:
            tracer = torch.fx.Tracer()
            tracer.proxy_buffer_attributes = True  # buffers read in forward stay inputs, not folded constants
            self.graph_module = torch.fx.GraphModule(self.model, tracer.trace(self.model))
        except Exception as e:
            raise ImportFailure(f"torch.fx cannot trace Model.forward: {describe(e)}")
        nodes = list(self.graph_module.graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.inputs):
            raise ImportFailure(f"Model.forward takes {len(placeholders)} inputs but get_inputs() gives "
                                f"{len(self.inputs)}")
        self.structure = [(n.name, n.op, str(n.target)) for n in nodes]
        self.slots = {}
        for i, x in enumerate(self.inputs):
            for d, v in enumerate(x.shape):
                self.slots[("input", i, d)] = v
        for qualname, p in named_tensors(self.model):
            for d, v in enumerate(p.shape):
                self.slots[("param", qualname, d)] = v
        for n in nodes:
            for path, v in int_leaves({"args": tuple(n.args), "kwargs": dict(n.kwargs)}):  # as Translator.resolve
                self.slots[("arg", n.name, path)] = v
            if n.op == "call_module":
                module = self.graph_module.get_submodule(n.target)
                for attr, value in vars(module).items():
                    if not attr.startswith("_"):
                        for path, v in int_leaves(value):
                            self.slots[("attr", n.name, attr, path)] = v

    def propagate_shapes(self):
        """Run the graph on get_inputs(), each tensor node's shape in node.meta["shape"]."""
        graph_module = self.graph_module

        class Raised(Exception):  # the error and its node, as attributes: fx rewrites an exception's args
            pass

        class Shapes(torch.fx.Interpreter):
            def run_node(self, n):
                try:
                    result = super().run_node(n)
                except Exception as e:
                    raised = Raised()
                    raised.node, raised.error = n, describe(e)
                    raise raised
                if isinstance(result, torch.Tensor):
                    n.meta["shape"] = list(result.shape)
                return result

        try:
            with torch.no_grad():
                Shapes(graph_module).run(*self.inputs)
        except Raised as r:
            raise ImportFailure(f"Model.forward raised {r.error}, at node {r.node.name} (op "
                                f"{op_text(r.node, graph_module)}), on get_inputs()")


def named_tensors(model):
    """Parameters then buffers, by qualified name, each once."""
    return list(model.named_parameters()) + list(model.named_buffers())


def int_leaves(value, path=()):
    """(path, int) for every integer (not bool) inside nested tuples, lists, dicts and slices."""
    if type(value) is int:
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from int_leaves(v, path + (i,))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from int_leaves(v, path + (k,))
    elif isinstance(value, slice):
        yield from int_leaves((value.start, value.stop, value.step), path + ("slice",))


def fit_expression(points, names):
    """The simplest expression of the sizes `names` that gives each (env, value) of points: a
    constant; a size; a size times, divided by, or plus a constant, or shifted then divided
    (`(K - 1) / 2`); two sizes multiplied, divided, added or subtracted. None when none fits."""
    env0, v0 = points[0]
    names = sorted(names)
    candidates = [IntExpr.of(v0)] if not names else []
    for g in names:
        s, g0 = IntExpr.of(g), env0[g]
        candidates.append(s)
        if g0 and v0 % g0 == 0:
            candidates.append(s * (v0 // g0))
        if v0 > 0:
            candidates += [s // c for c in range(2, min(g0, 64) + 1) if g0 // c == v0]
            candidates += [s // (g0 // v0)] if g0 // v0 > 64 else []
        candidates.append(s + (v0 - g0))
        candidates += [(s + shift) // c for shift in (-2, -1, 1, 2) for c in (2, 3, 4) if (g0 + shift) // c == v0]
    for a in names:
        for b in names:
            if a < b:
                candidates += [IntExpr.of(a) * b, IntExpr.of(a) + b]
            if a != b:
                candidates += [IntExpr.of(a) // b, IntExpr.of(a) - b]
    for c in candidates:
        if all(safe_eval(c, env) == v for env, v in points):
            return c
    return None


def safe_eval(expr, env):
    try:
        return expr.eval(env)
    except ZeroDivisionError:
        return None


# --- The op tables: torch's many spellings of one op, to one name ---

UNARY = {  # name -> DSL builtin of the same meaning (PyTorch's definition, the interpreter's float64 one)
    "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "exp2": "exp2", "log": "log",
    "log2": "log2", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "rsqrt": "rsqrt", "abs": "abs",
    "erf": "erf", "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil", "sign": "sign", "silu": "silu",
    "mish": "mish", "selu": "selu", "hardsigmoid": "hardsigmoid", "hardswish": "hardswish",
}
IDENTITY = ["contiguous", "clone", "detach", "float", "identity"]
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
    alias("to", "to", "type")
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


RESERVED = {
    "kernel", "where", "check", "require", "in", "else", "inf", "nan", "select", "min", "max", "sum", "prod", "argmax",
    "argmin", "f32", "i32", "i64", "bool", "true", "false", "graph", "sizes", "input", "output", "temp", "program",
    "for", "let", "block", "allocate", "barrier", "if", "reads", "writes", "split", "tile", "reorder", "fuse", "bind",
    "unroll", "inline", "cross_reduce", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "tanh",
    "erf", "sin", "cos", "abs", "floor", "ceil", "sign", "pow", "clamp", "sigmoid", "relu", "leaky_relu", "gelu",
    "gelu_tanh", "softplus", "silu", "mish", "elu", "selu", "hardtanh", "hardsigmoid", "hardswish"}
VAR_POOL = ["i", "j", "k", "l", "m", "p", "q", "r", "s", "t", "u", "v"]
DTYPES = {torch.float32: "f32", torch.float64: "f32", torch.float16: "f32", torch.bfloat16: "f32",
          torch.int64: "i64", torch.int32: "i32"} if torch else {}


def identifier(text):
    text = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text) or "t"
    return "t_" + text if text[0].isdigit() else text


# --- The translation ---

class Statement:
    def __init__(self, name, lhs, rhs):
        self.name, self.lhs, self.rhs = name, lhs, rhs  # lhs: [(var, extent, inferable)]


class Translator:
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

    # Step 2: which sizes each integer depends on.
    def measure_dependence(self):
        self.size_values = dict(self.constants)
        self.points = {key: [(self.size_values, v)] for key, v in self.base.slots.items()}
        self.depends = {key: set() for key in self.base.slots}
        for name, v in self.constants.items():
            # Two changes a size, a scaling and a shift, so that K / 2 and K - 2 (both 1 at K = 3) differ.
            for series in ((2 * v, 3 * v, v // 2), (v + 1, v + 2, v - 1)):
                for changed in (c for c in series if c >= 2 and c != v):
                    env = dict(self.size_values, **{name: changed})
                    try:
                        other = Build(self.path, self.tree, {name: changed})
                    except ImportFailure:
                        continue  # not a valid size for the module: try another
                    if other.structure != self.base.structure or other.slots.keys() != self.base.slots.keys():
                        continue  # a different graph: this value says nothing of dependence
                    for key, value in other.slots.items():
                        self.points[key].append((env, value))
                        if value != self.base.slots[key]:
                            self.depends[key].add(name)
                    break

    def slot(self, v):
        """The size expression of a model integer, fitted to every value observed."""
        if isinstance(v, IntExpr):
            return v
        if not isinstance(v, SlotInt):
            return IntExpr.of(v)
        if v.key not in self.resolved:
            expr = fit_expression(self.points[v.key], self.depends[v.key])
            if expr is None:
                raise Unsupported(f"{slot_text(v.key)} ({v.value}) depends on the sizes "
                                  f"{', '.join(sorted(self.depends[v.key]))} in a way the importer cannot name "
                                  f"(it names a size, a size times, divided by or plus a constant, or two sizes "
                                  f"multiplied, divided, added or subtracted)")
            self.resolved[v.key] = expr
        return self.resolved[v.key]

    def const(self, v):
        """An integer that fixes the structure (a dim, a flag): its value here."""
        if isinstance(v, SlotInt):
            return v.value
        return v.eval(self.size_values) if isinstance(v, IntExpr) else v

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
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise Unsupported(f"an operand of type {type(x).__name__}")
        return float_literal(x)

    def elementwise(self, fn, *operands, dtype="f32"):
        tensors = [o for o in operands if isinstance(o, Tensor)]
        shape = self.broadcast([t.shape for t in tensors])
        for t in tensors:
            if t.dtype != "f32" and dtype == "f32":
                raise Unsupported("integer tensors in arithmetic")
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
            self.outputs.append((out_name, value.dtype, value.shape))

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
        return self.stored(name, shape, DTYPES[tensor.dtype])

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

    # --- Handlers: one per op name, with torch's parameter names ---

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

    def scalar(self, v):
        if isinstance(v, SlotInt):
            return v if self.depends[v.key] else float(v.value)
        return v

    def arith(self, op, a, b):
        if not isinstance(a, (Tensor, float)) and not isinstance(b, (Tensor, float)) and op in "+-*":
            return {"+": operator.add, "-": operator.sub, "*": operator.mul}[op](self.slot(a), self.slot(b))
        a, b = self.scalar(a), self.scalar(b)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            raise Unsupported("arithmetic on two numbers")
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

    def op_identity(self, input, *args, **kwargs):
        return self.tensor(input)

    def op_dropout(self, input, p=0.5, training=True, inplace=False):
        if training and float(self.const(p)) != 0.0:
            raise Unsupported("dropout in training mode, which is random (Model.eval() or p=0 make it the identity)")
        return self.tensor(input)

    def op_to(self, input, *args, **kwargs):
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, torch.dtype) and DTYPES.get(a) != input.dtype:
                raise Unsupported(f"a conversion to {a}")
            if isinstance(a, (str, torch.device)):
                raise Unsupported("a move to a device")
        return self.tensor(input)

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
        if dtype is not None and DTYPES.get(dtype) != "f32":
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

        setattr(Translator, f"op_conv{nd}d", conv)
        setattr(Translator, f"op_conv_transpose{nd}d", conv_transpose)
        setattr(Translator, f"op_max_pool{nd}d", max_pool)
        setattr(Translator, f"op_avg_pool{nd}d", avg_pool)
        setattr(Translator, f"op_adaptive_avg_pool{nd}d", adaptive)


_add_nd_handlers()


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


def slot_text(key):
    if key[0] == "input":
        return f"dim {key[2]} of input {key[1]}"
    if key[0] == "param":
        return f"dim {key[2]} of {key[1]}"
    if key[0] == "arg":
        return f"an integer argument of node {key[1]}"
    return f"attribute {key[2]} of node {key[1]}"


def op_text(node, graph_module):
    if node.op == "call_module":
        return type(graph_module.get_submodule(node.target)).__name__
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_function":
        try:
            name = torch.fx.node._get_qualified_name(node.target)
        except Exception:
            name = getattr(node.target, "__name__", str(node.target))
        for internal, public in (("_operator.", "operator."), ("torch._C._nn.", "torch.nn.functional."),
                                 ("torch._C._special.", "torch.special."), ("builtins.", "")):
            if name.startswith(internal):
                name = public + name[len(internal):]
        return name
    return node.op


# --- Check sizes ---

CHECK_PICKS = [7, 9, 11, 13, 10, 12, 6, 5, 14, 15]


def choose_check_sizes(tr, sizes):
    """Small sizes at which the module is the same computation: tried in order, the first whose
    rebuild has the same graph, every fitted slot and shape rule right, and the requires met."""
    defaults = {s: tr.size_values[s] for s in sizes}
    tried = []
    if tr.given_check:
        unknown = [s for s in tr.given_check if s not in defaults]
        if unknown:
            raise ImportFailure(f"--check-sizes names {', '.join(unknown)}, not a size of the spec "
                                f"(its sizes: {', '.join(sizes)})")
        env = dict(defaults, **tr.given_check)
        why = check_sizes_fail(tr, env)
        if why:
            raise ImportFailure(f"--check-sizes {format_sizes(env)}: {why}")
        return env
    picks = iter(CHECK_PICKS * 4)
    small = {s: v if v <= 8 else min(v, next(picks)) for s, v in defaults.items()}
    quarter = {s: v if v <= 8 else max(8, v // 4) for s, v in defaults.items()}
    for env in (small, quarter):
        env = meet_requires(tr, dict(env))
        if env == defaults:
            break
        why = check_sizes_fail(tr, env)
        if not why:
            return env
        tried.append(f"{format_sizes(env)} ({why})")
    if tried:
        print(f"note: {tr.path}: no smaller check sizes kept the module the same ({'; '.join(tried)}); the "
              f"check sizes are the defaults", file=sys.stderr)
    return defaults


def meet_requires(tr, env):
    """Raise a size to the next multiple or to equality where a require asks for it."""
    for _ in range(4):
        for a, op, b in tr.requires:
            if op == "==" and b.is_const(0) and a.terms:  # x % y == 0
                (t, _c), = list(a.terms.items())[:1]
                if isinstance(t, tuple) and t[0] == "%" and t[1].single_name():
                    name, y = t[1].single_name(), safe_eval(t[2], env)
                    if y and env[name] % y:
                        env[name] += y - env[name] % y
            elif op == "==" and a.single_name() in env:
                value = safe_eval(b, env)
                if value:
                    env[a.single_name()] = value
    return env


def check_sizes_fail(tr, env):
    """Why env cannot be the check sizes, or None."""
    for a, op, b in tr.requires:
        va, vb = safe_eval(a, env), safe_eval(b, env)
        if va is None or vb is None or not {"==": va == vb}[op]:
            return f"require {a} {op} {b} fails"
    try:
        other = Build(tr.path, tr.tree, env, meta=False)  # small: the module really runs at the check sizes
        if other.structure != tr.base.structure:
            return "the module traces to another graph"
        other.propagate_shapes()
    except ImportFailure as e:
        return str(e)
    full_env = dict(tr.size_values, **env)
    for key, expr in tr.resolved.items():
        if other.slots.get(key) != safe_eval(expr, full_env):
            return f"{slot_text(key)} is {other.slots.get(key)}, not {expr}"
    nodes = {n.name: n for n in other.graph_module.graph.nodes}
    for name, shape in tr.node_shapes.items():
        theirs = nodes[name].meta.get("shape")
        mine = [safe_eval(d, full_env) for d in shape]
        if theirs != mine:
            return f"node {name} has shape {theirs}, not {mine}"
        if any(v is None or v < 1 for v in mine):
            return f"node {name} would be empty"
    return None


def format_sizes(env):
    return ", ".join(f"{k} = {v}" for k, v in env.items())


# --- Output ---

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
        elif dtype != "f32":
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


def write_atomically(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".ksmith_import-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def import_model(model_path, output=None, peer=None, name=None, check_sizes=None):
    """Translate MODEL.py; returns (spec text, peer entry dict). Raises ImportFailure."""
    tr = Translator(model_path, check_sizes)
    kernel = name or os.path.splitext(os.path.basename(model_path))[0]
    tr.translate(kernel)
    anchor = os.path.dirname(os.path.abspath(output)) if output else os.getcwd()
    label = relative(model_path, anchor) if output else model_path
    # What the module says it is, as the spec's comment: the file's docstring (which may name its
    # KernelBench problem, by which `ksmith bench` groups), else Model's; its first paragraph.
    model_doc = inspect.getdoc(tr.base.model)
    if model_doc == inspect.getdoc(nn.Module):
        model_doc = None
    doc = (inspect.cleandoc(tr.base.namespace.get("__doc__") or "") or model_doc or "").split("\n\n")[0]
    text, sizes = spec_text(tr, label, doc.strip().splitlines())
    peer_folder = os.path.dirname(os.path.abspath(peer)) if peer else anchor
    entry = {
        "module": relative(model_path, peer_folder),
        "kernel": tr.kernel,
        "sizes": {s: s for s in sizes},
        "inputs": [dict(name=n, **origin) for n, _, _, origin in tr.inputs],
        "outputs": [n for n, _, _ in tr.outputs],
    }
    return text, entry


def relative(path, folder):
    """path from folder, where that is a short way (a neighbouring folder), else absolute."""
    try:
        short = os.path.relpath(os.path.abspath(path), folder)
    except ValueError:  # another drive
        return os.path.abspath(path)
    return short if short.split(os.sep).count("..") <= 2 else os.path.abspath(path)


def parse_sizes(text):
    sizes = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        try:
            sizes[name.strip()] = int(value)
        except ValueError:
            raise ImportFailure(f"--check-sizes: '{item}' is not NAME=INTEGER")
    return sizes


def main(argv=None):
    parser = argparse.ArgumentParser(prog="ksmith import", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="MODEL.py, a module in KernelBench's form")
    parser.add_argument("-o", "--output", help="the spec (default: standard output)")
    parser.add_argument("--peer", help="the peer entry (default: beside -o, NAME.peer.json; none without -o)")
    parser.add_argument("--name", help="the kernel's name (default: MODEL's file name)")
    parser.add_argument("--check-sizes", default="", help="the spec's check sizes, N=V,... (default: chosen)")
    args = parser.parse_args(argv)
    if torch is None:
        print(f"error: PyTorch is not installed for {sys.executable} ({TORCH_MISSING}); on Debian: apt install "
              f"python3-torch", file=sys.stderr)
        return 1
    peer = args.peer
    if peer is None and args.output:
        peer = os.path.splitext(args.output)[0] + ".peer.json"
    try:
        torch.manual_seed(0)
        text, entry = import_model(args.model, args.output, peer, args.name, parse_sizes(args.check_sizes))
    except ImportFailure as e:
        print(f"error: {args.model}: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the importer's own bug: said as one, the traceback on request
        if os.environ.get("KSMITH_IMPORT_TRACEBACK"):
            raise
        print(f"error: {args.model}: internal error of the importer: {describe(e)} (KSMITH_IMPORT_TRACEBACK=1 "
              f"shows where)", file=sys.stderr)
        return 1
    if args.output:
        write_atomically(args.output, text)
    else:
        sys.stdout.write(text)
    if peer:
        write_atomically(peer, json.dumps(entry, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
