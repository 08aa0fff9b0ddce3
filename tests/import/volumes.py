"""3-D and 1-D convolutions and pooling, and the identities (dropout with p = 0, nn.Identity)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
channels = 3
depth = 6
height = 7
width = 5


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv3d(channels, 4, (2, 3, 1), stride=(1, 2, 1), padding=(1, 0, 0))
        self.up = nn.ConvTranspose1d(channels, 2, 3, stride=2, output_padding=1)
        self.pool = nn.MaxPool3d(2, stride=1)
        self.drop = nn.Dropout(p=0.0)
        self.keep = nn.Identity()
        self.register_buffer("taps", torch.randn(6, 1, 3))

    def forward(self, x):
        a = self.pool(self.drop(self.conv(x)))
        line = x.flatten(2)                       # (batch, channels, depth * height * width)
        b = F.avg_pool1d(self.up(line), 4, stride=3, padding=2)
        c = F.conv1d(line, self.taps * 0.5, groups=channels, dilation=2)
        return self.keep(a), b, c


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [channels]
