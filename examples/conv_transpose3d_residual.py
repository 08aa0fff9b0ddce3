"""Strided 3-D transposed convolution, then a bias and residual arithmetic on its output
(KernelBench level 2, 20: ConvTranspose3d_Sum_ResidualAdd_Multiply_ResidualAdd). At stride 2
only one kernel offset in two lands on an output position along each axis: what the stride
phases (`rewrite stride_phases`) skip."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.ConvTranspose3d (stride, padding, output padding); with its output o and a bias b of
    one value a channel: ((o + b) + o) * o + o."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, output_padding=output_padding)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv_transpose(x)
        original_x = x.clone().detach()
        x = x + self.bias
        x = x + original_x
        x = x * original_x
        x = x + original_x
        return x


batch_size = 2
in_channels = 3
out_channels = 4
depth, height, width = 3, 4, 5
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
bias_shape = (out_channels, 1, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape]
