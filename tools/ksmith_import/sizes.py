"""Size discovery: naming the model's integers as expressions of its sizes (each size changed
in a rebuild, the simplest expression fitted to what changed: SizeDiscovery, fit_expression),
and choosing the spec's check sizes (choose_check_sizes)."""
import sys

from .base import ImportFailure, Unsupported
from .expr import IntExpr, SlotInt
from .tracing import Build


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


def slot_text(key):
    if key[0] == "input":
        return f"dim {key[2]} of input {key[1]}"
    if key[0] == "param":
        return f"dim {key[2]} of {key[1]}"
    if key[0] == "arg":
        return f"an integer argument of node {key[1]}"
    return f"attribute {key[2]} of node {key[1]}"


class SizeDiscovery:
    """The Translator's size discovery: which sizes each slot of the base build depends on
    (measure_dependence, step 2: from the Translator's path, tree, constants and base build),
    and a slot's size expression (slot, fitted once into the Translator's resolved) or value (const)."""

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
