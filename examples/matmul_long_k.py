"""Matrix multiplication with a large K (KernelBench level 1, 6): examples/matmul_long_k.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B with K far larger than M and N."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 32
N = 32
K = 16384


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
