"""Softmax over the last dimension (KernelBench level 1, 23): examples/softmax.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.softmax(x, dim=1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


N = 256
D = 4096


def get_inputs():
    return [torch.randn(N, D)]


def get_init_inputs():
    return []
