"""Cumulative sum along the last dimension (KernelBench level 1, 89): examples/cumsum.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.cumsum(x, dim=1)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


B = 16
N = 2000


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return [1]
