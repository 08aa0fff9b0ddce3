import torch
import torch.nn as nn
import torch.nn.functional as F
batch_size = 2
in_channels = 4
out_channels = 6
height = 10
width = 9
length = 12
kernel_size = 3
groups = 2
class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.grouped = nn.Conv2d(in_channels, out_channels, kernel_size, stride=2, padding=1, dilation=2, groups=groups)
        self.same = nn.Conv2d(out_channels, out_channels, kernel_size, padding="same", bias=False)
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, stride=2)
        self.up = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1, output_padding=1, groups=groups)
        self.bn = nn.BatchNorm2d(out_channels)
        self.pool1d = nn.MaxPool1d(2)
        self.avg = nn.AvgPool2d(3, stride=2, padding=1)
        self.gap = nn.AdaptiveAvgPool2d(1)
    def forward(self, x, s):
        a = self.same(self.grouped(x))
        b = self.pool1d(self.conv1d(s))
        c = self.bn(self.up(x))
        d = self.avg(x)
        e = self.gap(c)
        f = F.max_pool2d(x, kernel_size=2, stride=1, padding=1, dilation=2)
        return a, b, c, d, e, f
def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width), torch.randn(batch_size, in_channels, length)]
def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups]
