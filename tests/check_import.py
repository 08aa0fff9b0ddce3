#!/usr/bin/env python3
"""`ksmith import` (tools/ksmith_import/) on every example's module, examples/NAME.py:

1. the imported spec computes what the module computes: the spec's own random inputs at its
   check sizes through `ksmith interpret` (float64) and through the module in float64
   (parameters and buffers set from the spec's inputs), outputs compared to 1e-9;
2. it computes what the hand-written example computes: the same inputs (matched by position)
   through examples/NAME.ks at the same sizes;
3. the committed spec and peer entry in bench/peers/ are what the importer writes now, and so
   is every example that is the importer's output (its first line says so);
4. errors: an operator it does not translate names the node and the op, a file without Model,
   a forward that raises, an integer input with no range: each exit 1, a message, no traceback,
   no file written.

Runs the importer in this process (one `import torch`), and through `ksmith import` for one
module and the errors. SKIPs (exit 77) only where Debian's Python has no PyTorch.
Usage: check_import.py KSMITH SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

DEBIAN_PYTHON = "/usr/bin/python3"

try:
    import torch
except ImportError:
    torch = None
if torch is None:
    has_torch = os.path.exists(DEBIAN_PYTHON) and subprocess.run(
        [DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
    if has_torch and os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON):
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)  # the importer's Python, which has torch
    print(f"SKIP: {DEBIAN_PYTHON} has no PyTorch (on Debian: apt install python3-torch)")
    sys.exit(77)

ksmith, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(source, "tools"))
import ksmith_import  # noqa: E402

work = tempfile.mkdtemp(prefix="check_import-")
failures = []


def fail(name, message):
    failures.append(f"{name}: {message}")
    print(f"FAIL {name}: {message}", flush=True)


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)


def interpret(spec, out, extra):
    r = run([ksmith, "interpret", spec, "-o", out] + extra)
    if r.returncode:
        raise RuntimeError(f"ksmith interpret {spec} {' '.join(extra)}: {r.stderr.strip()}")
    with open(out) as f:
        return json.load(f)


def signature(spec_path):
    """The declared inputs and outputs of a spec, in order: [name], [name]."""
    text = open(spec_path).read()
    head = text[text.index("kernel"):text.index("{")]
    params, _, outs = head.partition("->")
    declared = lambda part: re.findall(r"(\w+)\s*:\s*(?:f32|f16|bf16|i32|i64)\[", part)  # noqa: E731
    return declared(params), declared(outs.split("where")[0])


HALF = {"f16": (torch.float16, 2.0 ** -10), "bf16": (torch.bfloat16, 2.0 ** -7)}  # torch's type, one ulp at 1


def close(got, expected, dtype):
    """Every value within 1e-9 of the reference, relative to the larger of it and the rms; an
    integer exactly; a 16-bit float within one step of its format of the reference rounded to
    it (the spec's output is its float64 value rounded once, as the reference is here)."""
    if dtype not in ("f32",) + tuple(HALF):
        return got == expected
    rms = (sum(v * v for v in expected) / max(len(expected), 1)) ** 0.5
    if dtype in HALF:
        kind, ulp = HALF[dtype]
        rounded = torch.tensor(expected, dtype=torch.float64).to(kind).double().tolist()
        return all(abs(g - e) <= ulp * max(abs(e), rms) for g, e in zip(got, rounded))
    return all(abs(g - e) <= 1e-9 * max(abs(e), rms) + 1e-12 for g, e in zip(got, expected))


def module_outputs(module_path, entry, result, native=False):
    """The module in float64 on the spec's inputs, at the spec's sizes; native: in its own
    types (a half module's PyTorch semantics, every operation rounded)."""
    sizes = {entry["sizes"][name]: value for name, value in result["sizes"].items()}
    namespace = ksmith_import.load_module(module_path, sizes)
    torch.manual_seed(0)
    model, inputs = ksmith_import.build_model(namespace)
    own = {n: t.dtype for n, t in ksmith_import.named_tensors(model)}
    own_inputs = [a.dtype for a in inputs]
    model = model.double()
    args = list(inputs)
    for spec_input in entry["inputs"]:
        given = result["inputs"][spec_input["name"]]
        dtype = torch.float64 if given["dtype"] in ("f32",) + tuple(HALF) else torch.int64
        value = torch.tensor(given["values"], dtype=dtype).reshape(given["shape"])
        if "forward_argument" in spec_input:
            args[spec_input["forward_argument"]] = value
        else:
            qualname = spec_input.get("parameter") or spec_input.get("buffer")
            target = dict(ksmith_import.named_tensors(model))[qualname]
            with torch.no_grad():
                target.copy_(value.reshape(target.shape))
    args = [a.double() if a.is_floating_point() else a for a in args]
    if native:
        for n, t in ksmith_import.named_tensors(model):
            t.data = t.data.to(own[n])
        args = [a.to(t) if a.is_floating_point() else a for a, t in zip(args, own_inputs)]
    with torch.no_grad():
        out = model(*args)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare(name, what, got, expected):
    """got: [ (dtype, shape, values) ] of the spec; expected: the same of the reference."""
    if len(got) != len(expected):
        return fail(name, f"{what}: {len(got)} outputs, the reference has {len(expected)}")
    for i, ((g_dtype, g_shape, g_values), (e_dtype, e_shape, e_values)) in enumerate(zip(got, expected)):
        if list(g_shape) != list(e_shape) and len(g_values) != len(e_values):
            return fail(name, f"{what}: output {i} has shape {g_shape}, the reference's is {e_shape}")
        if not close(g_values, e_values, g_dtype):
            worst = max(range(len(g_values)), key=lambda k: abs(g_values[k] - e_values[k]))
            return fail(name, f"{what}: output {i} differs, element {worst}: {g_values[worst]!r} against "
                              f"{e_values[worst]!r}")
    return True


def import_and_check(name, module_path):
    """Import module_path, check the spec against the module in float64 at its check sizes;
    (spec path, peer entry, interpret's result, the spec's outputs) or None after a failure."""
    spec = os.path.join(work, name + ".ks")
    peer = os.path.join(work, name + ".peer.json")
    status = ksmith_import.main([module_path, "-o", spec, "--peer", peer])
    if status:
        return fail(name, f"the importer exited {status}")
    entry = json.load(open(peer))
    result = interpret(spec, os.path.join(work, name + ".out.json"), ["--check-sizes"])
    got = [(result["outputs"][o]["dtype"], result["outputs"][o]["shape"], result["outputs"][o]["values"])
           for o in entry["outputs"]]
    reference = module_outputs(module_path, entry, result)
    expected = [("f32" if t.is_floating_point() else "i64", list(t.shape), [float(v) for v in t.flatten().tolist()])
                for t in reference]
    if not compare(name, "against the module", got, expected):
        return None
    if "dtype" in entry:  # a half module: also against PyTorch's own 16-bit arithmetic, to eight steps
        native = module_outputs(module_path, entry, result, native=True)
        for i, ((g_dtype, _, g_values), t) in enumerate(zip(got, native)):
            values = t.double().flatten().tolist()
            rms = (sum(v * v for v in values) / max(len(values), 1)) ** 0.5
            ulp = HALF.get(g_dtype, (None, 2.0 ** -23))[1]
            worst = max(range(len(values)), key=lambda k: abs(g_values[k] - values[k]) / max(abs(values[k]), rms))
            if abs(g_values[worst] - values[worst]) > 8 * ulp * max(abs(values[worst]), rms):
                return fail(name, f"output {i} differs from the module in {t.dtype}, element {worst}: "
                                  f"{g_values[worst]!r} against {values[worst]!r}")
    return spec, entry, result, got


def check_module(name):
    module_path = os.path.join(source, "examples", name + ".py")
    checked = import_and_check(name, module_path)
    if not checked:
        return
    spec, entry, result, got = checked

    # 1. (above) Against the module, in float64. 3. The committed spec and peer entry are the importer's output now (the header names the
    # module by a path relative to the spec, so it is left out).
    committed_spec = os.path.join(source, "bench/peers", name + ".ks")
    committed_peer = os.path.join(source, "bench/peers", name + ".peer.json")
    if not os.path.exists(committed_spec) or not os.path.exists(committed_peer):
        fail(name, "bench/peers/ lacks its spec or peer entry (bash bench/import_modules.sh writes them)")
    else:
        if open(committed_spec).read().split("\n", 1)[1] != open(spec).read().split("\n", 1)[1]:
            fail(name, f"bench/peers/{name}.ks is not what the importer writes now (bash bench/import_modules.sh)")
        committed = json.load(open(committed_peer))
        for e, folder in ((committed, os.path.dirname(committed_peer)), (entry, work)):
            e["module"] = os.path.normpath(os.path.join(folder, e["module"]))
        if committed != entry:
            fail(name, f"bench/peers/{name}.peer.json is not what the importer writes now "
                       f"(bash bench/import_modules.sh)")

    # 2. Against the hand-written example, on the same inputs at the same sizes; an example
    # that is the importer's output (the level-2 problems of the rewrites) must be what it
    # writes now.
    example = os.path.join(source, "examples", name + ".ks")
    example_text = open(example).read()
    if example_text.startswith("# Imported by `ksmith import`") and \
            example_text.split("\n", 1)[1] != open(spec).read().split("\n", 1)[1]:
        fail(name, f"examples/{name}.ks is not what the importer writes now (bash bench/import_modules.sh)")
    example_inputs, example_outputs = signature(example)
    if len(example_inputs) != len(entry["inputs"]):
        return fail(name, f"{len(entry['inputs'])} inputs, examples/{name}.ks has {len(example_inputs)}")
    given = {mine: {"values": result["inputs"][theirs["name"]]["values"]}
             for mine, theirs in zip(example_inputs, entry["inputs"])}
    inputs_file = os.path.join(work, name + ".example_inputs.json")
    with open(inputs_file, "w") as f:
        json.dump(given, f)
    sizes = [f"--size={k}={v}" for k, v in result["sizes"].items()]
    theirs = interpret(example, os.path.join(work, name + ".example.json"), sizes + ["--inputs", inputs_file])
    expected = [(theirs["outputs"][o]["dtype"], theirs["outputs"][o]["shape"], theirs["outputs"][o]["values"])
                for o in example_outputs]
    if compare(name, f"against examples/{name}.ks", got, expected):
        print(f"ok {name}: {result['sizes']}", flush=True)


def check_error(label, module_text, expected, options=()):
    """ksmith import on a bad module: exit 1, the expected message, no traceback, no files."""
    model = os.path.join(work, f"bad_{label}.py")
    with open(model, "w") as f:
        f.write(module_text)
    out = os.path.join(work, f"bad_{label}.ks")
    r = run([ksmith, "import", model, "-o", out] + list(options))
    message = r.stderr.strip()
    if r.returncode != 1 or expected not in message or "Traceback" in r.stderr:
        return fail(f"error {label}", f"exit {r.returncode}, stderr:\n{r.stderr}\nexpected exit 1 and '{expected}'")
    if os.path.exists(out) or os.path.exists(os.path.join(work, f"bad_{label}.peer.json")):
        return fail(f"error {label}", "a file was written")
    print(f"ok error {label}: {message}", flush=True)


HEAD = "import torch\nimport torch.nn as nn\n\nN = 8\nD = 16\n\n\ndef get_inputs():\n    return [torch.randn(N, D)]\n\n\n" \
       "def get_init_inputs():\n    return []\n\n\n"

started = time.time()
# Every example has its module beside it (examples/NAME.ks and examples/NAME.py), and every module its spec.
listed = os.listdir(os.path.join(source, "examples"))
names = sorted(f[:-3] for f in listed if f.endswith(".py"))
examples = sorted(f[:-3] for f in listed if f.endswith(".ks"))
if names != examples:
    fail("examples", f"modules (.py) {names} are not the specs (.ks) {examples}")
for name in names:
    try:
        check_module(name)
    except Exception as e:  # one module's trouble, reported with the rest
        fail(name, f"{type(e).__name__}: {e}")

# The operators beyond the bench's: each module of tests/import/ against itself.
coverage = sorted(f for f in os.listdir(os.path.join(source, "tests/import")) if f.endswith(".py"))
for file in coverage:
    try:
        if import_and_check("import_" + file[:-3], os.path.join(source, "tests/import", file)):
            print(f"ok tests/import/{file}", flush=True)
    except Exception as e:
        fail(file, f"{type(e).__name__}: {e}")

# Random 16-bit modules (tests/half_graphs.py): the interpreter's 16-bit semantics against
# PyTorch's own arithmetic at the type, and against the module in float64.
sys.path.insert(0, os.path.join(source, "tests"))
import half_graphs  # noqa: E402
random_half = 0
for dtype in ("bfloat16", "float16"):
    for seed, text in half_graphs.modules(10, dtype):
        name = f"half_graph_{dtype}_{seed}"
        path = os.path.join(work, name + ".py")
        with open(path, "w") as f:
            f.write(text)
        try:
            if import_and_check(name, path):
                random_half += 1
            else:
                print(text, flush=True)
        except Exception as e:
            fail(name, f"{type(e).__name__}: {e}\n{text}")

# Attention written by hand, as minGPT does (tests/import/attention.py): once imported, the
# rewrites recognise it, whatever the importer's spelling (online_attention fuses its weighted sum).
r = run([ksmith, "rewrite", os.path.join(work, "import_attention.ks"), "--json"])
fusing = [(f["rule"], f["stage"]) for f in json.loads(r.stdout)["fusing"]] if r.returncode == 0 else []
if ("online_attention", "matmul_1") not in fusing:
    fail("attention", f"ksmith rewrite does not list online_attention for the imported attention: {fusing} {r.stderr}")

# The command as a user runs it: stdout without -o, and the peer entry beside -o by default.
r = run([ksmith, "import", os.path.join(source, "examples/softmax.py")])
if r.returncode or not r.stdout.startswith("# Imported by `ksmith import`") or "kernel softmax(" not in r.stdout:
    fail("ksmith import", f"exit {r.returncode}:\n{r.stdout}{r.stderr}")
r = run([ksmith, "import", os.path.join(source, "examples/softmax.py"), "-o", os.path.join(work, "cli.ks"),
         "--check-sizes", "N=3,D=5"])
if r.returncode or not os.path.exists(os.path.join(work, "cli.peer.json")) or \
        "check N = 3, D = 5" not in open(os.path.join(work, "cli.ks")).read():
    fail("ksmith import -o", f"exit {r.returncode}, no cli.peer.json beside cli.ks or no check N = 3, D = 5:\n{r.stderr}")

# A peer entry written to what is not a regular file (a pipe, /dev/null) is written to it,
# never replaced by a rename: the pipe is still a pipe, and what came through it is the entry.
fifo = os.path.join(work, "peer.fifo")
os.mkfifo(fifo)
received = []
reader = __import__("threading").Thread(target=lambda: received.append(open(fifo).read()))
reader.start()
r = run([ksmith, "import", os.path.join(source, "examples/softmax.py"), "-o", os.path.join(work, "fifo.ks"),
         "--peer", fifo])
reader.join(timeout=60)
if r.returncode or not __import__("stat").S_ISFIFO(os.stat(fifo).st_mode) or not received or \
        '"kernel": "softmax"' not in received[0]:
    fail("ksmith import --peer FIFO", f"exit {r.returncode}, the pipe replaced or the entry not sent:\n{r.stderr}")

check_error("unsupported", HEAD + "class Model(nn.Module):\n    def forward(self, x):\n"
            "        return torch.cat([x.relu(), x], dim=1)\n", "node cat (op torch.cat)")
check_error("int_inside", HEAD + "class Model(nn.Module):\n    def forward(self, x):\n"
            "        return x.to(torch.int32) * 2\n", "a conversion to torch.int32")
check_error("no_model", "import torch\n\ndef get_inputs():\n    return []\n\ndef get_init_inputs():\n    return []\n",
            "defines no Model")
check_error("forward_raises", HEAD + "class Model(nn.Module):\n    def forward(self, x):\n"
            "        return x @ x\n", "Model.forward raised RuntimeError")
check_error("trace_fails", HEAD + "class Model(nn.Module):\n    def forward(self, x):\n"
            "        raise ValueError('no forward here')\n", "ValueError: no forward here")
check_error("integer_input", "import torch\nimport torch.nn as nn\n\nN = 8\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, x, i):\n        return x * 2.0\n\n\ndef get_inputs():\n"
            "    return [torch.randn(N), torch.randint(0, 4, (N,))]\n\n\ndef get_init_inputs():\n    return []\n",
            "input i is an integer tensor")
check_error("bad_check_sizes", "import torch\nimport torch.nn as nn\n\nN = 8\nC = 16\nG = 4\n\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.gn = nn.GroupNorm(G, C)\n\n    def forward(self, x):\n        return self.gn(x)\n\n\n"
            "def get_inputs():\n    return [torch.randn(N, C)]\n\n\ndef get_init_inputs():\n    return []\n",
            "--check-sizes N = 8, C = 6, G = 4: require C % G == 0 fails", ["--check-sizes", "C=6"])

elapsed = time.time() - started
if failures:
    print(f"FAIL: {len(failures)} of the checks ({elapsed:.0f} s):\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"PASS: {len(names)} examples' modules imported and checked against themselves and the examples, "
      f"{len(coverage)} of tests/import against themselves, {random_half} random 16-bit modules against "
      f"PyTorch's own arithmetic, the errors ({elapsed:.0f} s)")
