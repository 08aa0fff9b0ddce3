"""Batched matrix multiplication (KernelBench level 1, 3): examples/batched_matmul.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """C[z] = A[z] @ B[z] for each of B batches."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


B = 16
M = 128
K = 128
N = 128


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(B, K, N)]


def get_init_inputs():
    return []
