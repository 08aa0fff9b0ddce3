"""3-D transposed convolution, scaling, batch normalisation (batch statistics), global average
pool (KernelBench level 2, 77: ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool). The pool of the
normalised values pushed through the normalisation and the convolution; the variance still needs
the convolution."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.ConvTranspose3d, times a scale factor, nn.BatchNorm3d in training mode, mean over the
    volume (keepdim)."""

    def __init__(self, in_channels, out_channels, kernel_size, scale_factor, eps=1e-5, momentum=0.1):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size)
        self.scale_factor = scale_factor
        self.batch_norm = nn.BatchNorm3d(out_channels, eps=eps, momentum=momentum)
        self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x * self.scale_factor
        x = self.batch_norm(x)
        x = self.global_avg_pool(x)
        return x


batch_size = 2
in_channels = 2
out_channels = 4
depth = 2
height = 3
width = 3
kernel_size = 3
scale_factor = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale_factor]
