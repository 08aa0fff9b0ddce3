"""Square matrix multiplication (KernelBench level 1, 1): examples/matmul.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for square matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


N = 512


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
