"""RMS normalisation over the last dimension, eps 1e-6, with a weight, in the manner of
KernelBench level 1, 36 (which normalises dim 1 of a 4-D tensor with eps 1e-5 and no weight):
examples/rms_norm.ks. Written out rather than F.rms_norm, which Debian's PyTorch (1.13) lacks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """x * rsqrt(mean(x^2) + eps) * weight over the last dimension."""

    def __init__(self, num_features, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


N = 256
D = 4096


def get_inputs():
    return [torch.randn(N, D)]


def get_init_inputs():
    return [D]
