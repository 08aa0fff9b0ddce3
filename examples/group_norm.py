"""Group normalisation (KernelBench level 1, 35): examples/group_norm.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.GroupNorm(G, C)."""

    def __init__(self, num_features, num_groups):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x):
        return self.gn(x)


N = 8
C = 64
G = 8
H = 32
W = 32


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [C, G]
