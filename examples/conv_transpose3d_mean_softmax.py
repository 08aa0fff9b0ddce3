"""3-D transposed convolution, mean over depth, bias, softmax over the channels, tanh, scaling
(KernelBench level 2, 13: ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling). The mean over depth
pushed through the convolution sums the input along depth under each depth offset."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.ConvTranspose3d, mean over depth (keepdim), plus a bias per channel, softmax over the
    channels, tanh, times a scaling factor."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, scaling_factor):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding)
        self.bias = nn.Parameter(torch.randn(1, out_channels, 1, 1, 1))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x.mean(dim=2, keepdim=True)
        x = x + self.bias
        x = torch.softmax(x, dim=1)
        x = torch.tanh(x)
        x = x * self.scaling_factor
        return x


batch_size = 2
in_channels = 2
out_channels = 4
depth = 4
height = 4
width = 4
kernel_size = 3
stride = 1
padding = 1
scaling_factor = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, scaling_factor]
