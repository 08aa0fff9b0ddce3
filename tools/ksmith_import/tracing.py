"""Tracing: loading MODEL.py (at its own sizes or others: load_module, build_model), tracing
Model with torch.fx, propagating shapes (Build), and the integer slots a build holds; also
what bench/torch_peer.py builds modules with."""
import ast
import contextlib
import dis
import inspect
import operator
import os
import sys

from .base import ImportFailure, describe, nn, torch


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


def _unpacking_iter(self):
    """Proxy.__iter__ that finds the unpacking instruction (`b, c, h, w = x.shape`) by its
    offset. torch.fx (Debian's 1.13) looks it up at index f_lasti // 2 of the calling code's
    instructions, which Python 3.11's inline caches shift: an IndexError, or the wrong
    instruction."""
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


@contextlib.contextmanager
def unpacking_proxies():
    """Proxy.__iter__ (and so its subclasses', x.shape's Attribute among them) as
    _unpacking_iter while tracing."""
    saved = torch.fx.proxy.Proxy.__iter__
    torch.fx.proxy.Proxy.__iter__ = _unpacking_iter
    try:
        yield
    finally:
        torch.fx.proxy.Proxy.__iter__ = saved

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
            with unpacking_proxies():
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
        """Run the graph on get_inputs(), each tensor node's shape in node.meta["shape"] and its
        type in node.meta["dtype"]."""
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
                    n.meta["dtype"] = result.dtype
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

