"""Random modules of 16-bit tensors for tests/check_import.py: the interpreter's 16-bit
semantics (stores rounded to the format, arithmetic in f32 or wider, `x.to(dtype)` inside
forward a rounding) against PyTorch's own arithmetic on the CPU, every operation of which
rounds to the format. Each module: one or two (N, D) inputs and a (D, D) weight of the type,
four to seven operations drawn from those Debian's PyTorch computes at that type on the CPU,
and one or two 16-bit outputs. Seeded: the same modules every run."""
import random

N, D = 6, 16
UNARY = ["torch.relu({})", "torch.tanh({})", "torch.sigmoid({})", "{}.abs()", "torch.nn.functional.gelu({})",
         "torch.exp({}.clamp(max=2.0))", "torch.sqrt({}.abs() + 1.0)"]
BINARY = ["{} + {}", "{} - {}", "{} * {}", "torch.maximum({}, {})"]
ROW = ["{}.sum(dim=1, keepdim=True)", "{}.mean(dim=1, keepdim=True)", "{}.amax(dim=1, keepdim=True)"]
SCALES = ["0.5", "1.5", "-2.0", "0.75"]


def module_text(seed, dtype):
    """The module's source: dtype "bfloat16" or "float16"."""
    rng = random.Random(seed)
    lines, values = [], ["x", "y"]
    full = ["x", "y"]  # (N, D) values; the rest are (N, 1)
    for step in range(rng.randint(4, 7)):
        a = rng.choice(full)
        kind = rng.choice(["unary", "binary", "scalar", "row", "softmax", "matmul", "convert"])
        if kind == "unary":
            text = rng.choice(UNARY).format(a)
        elif kind == "binary":
            text = rng.choice(BINARY).format(a, rng.choice(values))  # (N, D) with either shape
        elif kind == "scalar":
            text = f"{a} * {rng.choice(SCALES)} + {rng.choice(SCALES)}"
        elif kind == "row":
            text = rng.choice(ROW).format(a)
        elif kind == "softmax":
            text = f"torch.softmax({a}, dim=1)"
        elif kind == "matmul":
            text = f"{a} @ self.w"
        else:  # f32 arithmetic, rounded to the type, then met with another of the type
            text = f"({a}.float() * {rng.choice(SCALES)}).to(torch.{dtype}) + {rng.choice(full)}"
        name = f"t{step}"
        lines.append(f"        {name} = {text}")
        values.append(name)
        if kind != "row":
            full.append(name)
    outputs = [full[-1]] + ([values[-2]] if rng.random() < 0.5 and values[-2] not in ("x", "y") else [])
    body = "\n".join(lines)
    return (f'"""Random {dtype} module, seed {seed} (tests/half_graphs.py)."""\n'
            "import torch\nimport torch.nn as nn\n\n"
            f"N = {N}\nD = {D}\n\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.w = nn.Parameter(torch.randn(D, D) * 0.25)\n        self.to(torch.{dtype})\n\n"
            f"    def forward(self, x, y):\n{body}\n        return {', '.join(outputs)}\n\n\n"
            f"def get_inputs():\n    return [torch.randn(N, D).to(torch.{dtype}), torch.randn(N, D).to(torch.{dtype})]\n\n\n"
            "def get_init_inputs():\n    return []\n")


def runs_natively(text):
    """Whether PyTorch computes the module at its own type here (1.13's CPU lacks some f16
    kernels): the draws it cannot run are skipped, not failed."""
    import torch
    namespace = {}
    exec(compile(text, "<half graph>", "exec"), namespace)
    try:
        with torch.no_grad():
            namespace["Model"]()(*namespace["get_inputs"]())
        return True
    except RuntimeError:
        return False


def modules(count, dtype, first_seed=0):
    """count runnable modules' (seed, text), seeds from first_seed on."""
    out, seed = [], first_seed
    while len(out) < count and seed < first_seed + 50 * count:
        text = module_text(seed, dtype)
        if runs_natively(text):
            out.append((seed, text))
        seed += 1
    return out
