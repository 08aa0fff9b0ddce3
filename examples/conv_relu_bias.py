"""Conv2d + ReLU + bias add (KernelBench level 2, 1): examples/conv_relu_bias.ks. The added bias
is (O, 1, 1), as KernelBench's; the spec's is (O): the same values."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv2d (with its bias), ReLU, then a learned bias per channel."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        return x


N = 4
C = 16
H = 32
W = 32
O = 32
K = 3
bias_shape = (O, 1, 1)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [C, O, K, bias_shape]
