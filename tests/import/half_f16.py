"""An f16 module, as `.half()` makes one: a row scaled by its largest magnitude, a weight, a
residual, relu, a mean; its outputs f16 (the ops Debian's PyTorch computes in f16 on the CPU)."""
import torch
import torch.nn as nn

N = 6
D = 20


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(D) + 0.5)
        self.half()

    def forward(self, x):
        scaled = x / (x.abs().amax(dim=1, keepdim=True) + 1.0) * self.weight
        y = torch.maximum(scaled + x * 0.5, x * 0.25)
        return y, y.mean(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(N, D).half()]


def get_init_inputs():
    return []
