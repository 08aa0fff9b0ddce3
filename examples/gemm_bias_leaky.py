"""GEMM + bias, scaled by 2, LeakyReLU 0.1 (KernelBench level 2, 12: Gemm_Multiply_LeakyReLU):
examples/gemm_bias_leaky.ks."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear, times a multiplier, nn.LeakyReLU."""

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        x = self.leaky_relu(x)
        return x


M = 256
N = 512
K = 512
multiplier = 2.0
negative_slope = 0.1


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N, multiplier, negative_slope]
