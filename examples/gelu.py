"""GELU, the erf form (KernelBench level 1, 26): examples/gelu.ks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.gelu(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)


N = 1024
D = 4096


def get_inputs():
    return [torch.randn(N, D)]


def get_init_inputs():
    return []
