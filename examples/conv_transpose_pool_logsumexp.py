"""Transposed convolution, global average pool, bias, logsumexp over the channels, sum, times 10
(KernelBench level 2, 42: ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply). The
pool of a full transposed convolution is the input's sums through the summed kernel."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.ConvTranspose2d, mean over the image (keepdim), plus a bias, logsumexp over the
    channels, sum over the image's axes of one, times 10."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.mean(x, dim=(2, 3), keepdim=True)
        x = x + self.bias
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = torch.sum(x, dim=(2, 3))
        x = x * 10.0
        return x


batch_size = 2
in_channels = 4
out_channels = 8
height = 6
width = 6
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
