"""Strided transposed convolution, times a multiplier, global average pool twice
(KernelBench level 2, 44: ConvTranspose2d_Multiply_GlobalAvgPool_GlobalAvgPool_Mean). The pool
pushed through the convolution sums the input under each kernel offset; the second pool is over
one value."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.ConvTranspose2d (stride, padding, output padding), times a multiplier, mean over the
    image (keepdim), and again."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, multiplier):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, output_padding=output_padding)
        self.multiplier = multiplier

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x * self.multiplier
        x = torch.mean(x, dim=[2, 3], keepdim=True)
        x = torch.mean(x, dim=[2, 3], keepdim=True)
        return x


batch_size = 2
in_channels = 4
out_channels = 4
height = 4
width = 4
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
multiplier = 0.5


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, multiplier]
