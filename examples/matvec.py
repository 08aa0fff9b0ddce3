"""Matrix-vector product (KernelBench level 1, 4, with the vector 1-D where KernelBench's is
(K, 1)): examples/matvec.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = A @ x."""

    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.matmul(a, x)


M = 2048
K = 2048


def get_inputs():
    return [torch.randn(M, K), torch.randn(K)]


def get_init_inputs():
    return []
