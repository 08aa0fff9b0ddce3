"""2-D convolution without bias, strided, padded and dilated (KernelBench level 1, 63 is the case
S = 1, P = 0, DIL = 1): examples/conv2d.ks. The weight is a forward argument, as the spec's is."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv2d(x, w) with one stride, padding and dilation for both axes."""

    def __init__(self, stride, padding, dilation):
        super().__init__()
        self.stride, self.padding, self.dilation = stride, padding, dilation

    def forward(self, x, w):
        return F.conv2d(x, w, stride=self.stride, padding=self.padding, dilation=self.dilation)


N = 4
C = 16
H = 32
W = 32
O = 32
KH = 3
KW = 3
S = 2
P = 1
DIL = 1


def get_inputs():
    return [torch.randn(N, C, H, W), torch.randn(O, C, KH, KW)]


def get_init_inputs():
    return [S, P, DIL]
