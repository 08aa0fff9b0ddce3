"""Mean cross-entropy of logits against integer class targets (KernelBench level 1, 95):
examples/cross_entropy.ks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.cross_entropy(logits, target)."""

    def __init__(self):
        super().__init__()

    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


N = 4096
C = 1000


def get_inputs():
    return [torch.randn(N, C), torch.randint(0, C, (N,))]


def get_init_inputs():
    return []
