"""The command line: import_model (the steps in order, MODEL.py to the spec's text and the peer
entry), parse_sizes, and main: its options, the files it writes, and how errors are said
(`error: MODEL.py: ...`, exit status 1, nothing written)."""
import argparse
import json
import os
import sys

from .base import TORCH_MISSING, ImportFailure, describe, torch
from .peer import peer_entry, relative
from .spec import module_doc, spec_text, write_atomically
from .translate import Translator


def import_model(model_path, output=None, peer=None, name=None, check_sizes=None):
    """Translate MODEL.py; returns (spec text, peer entry dict). Raises ImportFailure."""
    tr = Translator(model_path, check_sizes)
    kernel = name or os.path.splitext(os.path.basename(model_path))[0]
    tr.translate(kernel)
    anchor = os.path.dirname(os.path.abspath(output)) if output else os.getcwd()
    label = relative(model_path, anchor) if output else model_path
    text, sizes = spec_text(tr, label, module_doc(tr).strip().splitlines())
    peer_folder = os.path.dirname(os.path.abspath(peer)) if peer else anchor
    return text, peer_entry(tr, model_path, peer_folder, sizes)


def parse_sizes(text):
    sizes = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        try:
            sizes[name.strip()] = int(value)
        except ValueError:
            raise ImportFailure(f"--check-sizes: '{item}' is not NAME=INTEGER")
    return sizes


# --help's description: the first line of the package's docstring (__init__.py).
DESCRIPTION = "ksmith import: a PyTorch module in KernelBench's form to a .ks spec and its peer entry."


def main(argv=None):
    parser = argparse.ArgumentParser(prog="ksmith import", description=DESCRIPTION)
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

