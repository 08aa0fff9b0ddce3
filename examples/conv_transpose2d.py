"""Transposed 2-D convolution without bias, square kernel, strided and padded (in the manner of
KernelBench level 1, 71, which is the case S = 1, P = 0): examples/conv_transpose2d.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.ConvTranspose2d without bias."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                   padding=padding, bias=False)

    def forward(self, x):
        return self.conv_transpose2d(x)


N = 4
C = 16
O = 16
H = 16
W = 16
K = 3
S = 2
P = 1


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [C, O, K, S, P]
