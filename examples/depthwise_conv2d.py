"""Depthwise 2-D convolution, stride 1, zero "same" padding of K // 2, no bias, in the manner of
KernelBench level 1, 82 (which pads 0): examples/depthwise_conv2d.ks. The weight is
nn.Conv2d's, (C, 1, K, K), where the spec's is (C, K, K): the same values."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """A depthwise nn.Conv2d: one K x K filter per channel."""

    def __init__(self, in_channels, kernel_size):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size, padding=kernel_size // 2,
                                groups=in_channels, bias=False)

    def forward(self, x):
        return self.conv2d(x)


N = 4
C = 32
H = 64
W = 64
K = 3


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [C, K]
