"""2-D average pooling, no padding (KernelBench level 1, 45 when S = K): examples/avg_pool2d.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool2d(K, S)."""

    def __init__(self, kernel_size, stride):
        super().__init__()
        self.avg_pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=0)

    def forward(self, x):
        return self.avg_pool(x)


N = 8
C = 32
H = 64
W = 64
K = 3
S = 2


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [K, S]
