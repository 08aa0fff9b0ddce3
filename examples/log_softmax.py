"""Log-softmax over the last dimension (KernelBench level 1, 24): examples/log_softmax.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.log_softmax(x, dim=1)."""

    def __init__(self, dim=1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.log_softmax(x, dim=self.dim)


N = 256
D = 4096


def get_inputs():
    return [torch.randn(N, D)]


def get_init_inputs():
    return []
