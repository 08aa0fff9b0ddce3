"""Mean squared error between predictions and targets (KernelBench level 1, 94):
examples/mse_loss.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.mean((prediction - target) ** 2), as KernelBench writes it."""

    def __init__(self):
        super().__init__()

    def forward(self, prediction, target):
        return torch.mean((prediction - target) ** 2)


N = 1024
D = 1024


def get_inputs():
    return [torch.randn(N, D), torch.randn(N, D)]


def get_init_inputs():
    return []
