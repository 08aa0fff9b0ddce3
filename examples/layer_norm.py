"""Layer normalisation over the trailing dimension with scale and shift (KernelBench level 1, 40,
its trailing dimensions flattened to D): examples/layer_norm.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm over the last dimension."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return self.ln(x)


N = 256
D = 4096


def get_inputs():
    return [torch.randn(N, D)]


def get_init_inputs():
    return [(D,)]
