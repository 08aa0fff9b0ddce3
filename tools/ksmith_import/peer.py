"""Peer entries: what bench/torch_peer.py needs to build and time the module at any sizes (the
module's path, the spec's kernel, its sizes, where each input comes from, the outputs), and
the short relative paths they and the spec's comment name files by."""
import os

from .ops import FLOATS


def peer_entry(tr, model_path, peer_folder, sizes):
    """The peer entry of a translated module (tr): paths relative to peer_folder, where the entry
    is written; sizes, the spec's (the module's constants it names), each its own name. A half
    module's entry says its type ("dtype": "f16" or "bf16", or "mixed" where its tensors' types
    differ), at which the peer runs it; without one, f32."""
    entry = {
        "module": relative(model_path, peer_folder),
        "kernel": tr.kernel,
        "sizes": {s: s for s in sizes},
        "inputs": [dict(name=n, **origin) for n, _, _, origin in tr.inputs],
        "outputs": [n for n, _, _ in tr.outputs],
    }
    floats = {t for _, t, _, _ in tr.inputs if t in FLOATS} | {t for _, t, _ in tr.outputs if t in FLOATS}
    if floats - {"f32"}:
        entry["dtype"] = floats.pop() if len(floats) == 1 else "mixed"
    return entry


def relative(path, folder):
    """path from folder, where that is a short way (a neighbouring folder), else absolute."""
    try:
        short = os.path.relpath(os.path.abspath(path), folder)
    except ValueError:  # another drive
        return os.path.abspath(path)
    return short if short.split(os.sep).count("..") <= 2 else os.path.abspath(path)
