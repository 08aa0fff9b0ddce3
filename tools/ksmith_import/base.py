"""What every part of the importer shares: torch, imported where it is installed (main() says
where it is not: TORCH_MISSING), the two errors (ImportFailure, the user's; Unsupported, a
node's), and describe (an exception in one line)."""
TORCH_MISSING = None
try:
    import torch
    import torch.fx
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as missing:  # said by main(), as an error rather than a traceback
    torch = nn = F = None
    TORCH_MISSING = missing


class ImportFailure(Exception):
    """The user's error: printed as `error: MODEL.py: message`, exit status 1."""


class Unsupported(Exception):
    """A node the importer cannot translate: why, to be prefixed with the node and its op."""


def describe(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
