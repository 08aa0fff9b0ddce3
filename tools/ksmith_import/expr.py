"""The values of the translation: integer expressions (IntExpr, the sizes, loop variables and
what shapes and indices make of them), the DSL's float expressions (E and the helpers that
bracket them) and the values a node can have (Tensor, SlotInt, MaxResult)."""
import math


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

class Scalar:
    """A float computed from sizes (`1.0 / math.sqrt(k.size(-1))`): its DSL expression, read
    where a tensor's element is, and its value at the traced sizes."""

    def __init__(self, expr, value):
        self.expr, self.value = expr, value


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


