"""2-D max pooling with padding (KernelBench level 1, 42): examples/max_pool2d.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MaxPool2d(K, S, P)."""

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.maxpool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.maxpool(x)


N = 8
C = 32
H = 64
W = 64
K = 3
S = 2
P = 1


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [K, S, P]
