"""Linear layer, GELU, softmax over the features (KernelBench level 2, 99):
examples/matmul_gelu_softmax.ks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Linear, F.gelu, F.softmax(dim=1)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = F.gelu(x)
        x = F.softmax(x, dim=1)
        return x


M = 128
N = 512
K = 512


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
