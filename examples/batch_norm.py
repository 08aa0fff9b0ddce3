"""Batch normalisation, training statistics (KernelBench level 1, 33): examples/batch_norm.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm2d in training mode: each channel normalised by its batch statistics."""

    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        return self.bn(x)


N = 8
C = 16
H = 32
W = 32


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [C]
