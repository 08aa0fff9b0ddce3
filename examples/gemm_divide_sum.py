"""GEMM, divided by 2, summed over the features, scaled (KernelBench level 2, 14: Gemm_Divide_Sum_Scaling).
A sum over a linear layer's outputs: push_sum makes it a column sum of the weight and a GEMV."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """x @ W.T, / 2, sum over dim 1 (keepdim), times a scaling factor."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = torch.matmul(x, self.weight.T)
        x = x / 2
        x = torch.sum(x, dim=1, keepdim=True)
        x = x * self.scaling_factor
        return x


batch_size = 256
input_size = 512
hidden_size = 512
scaling_factor = 1.5


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, scaling_factor]
