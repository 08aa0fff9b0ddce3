"""Sum over the middle dimension (KernelBench level 1, 47, without its keepdim):
examples/sum_dim.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.sum(x, dim=1)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim)


B = 16
R = 256
D = 1024


def get_inputs():
    return [torch.randn(B, R, D)]


def get_init_inputs():
    return [1]
