"""Index of the largest element over the middle dimension (KernelBench level 1, 51):
examples/argmax_dim.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.argmax(x, dim=1)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)


B = 16
R = 256
D = 1024


def get_inputs():
    return [torch.randn(B, R, D)]


def get_init_inputs():
    return [1]
