"""GEMM, group normalisation, LeakyReLU, x + x (KernelBench level 2, 62: Matmul_GroupNorm_LeakyReLU_Sum).
The sum of the activation with itself is twice it: fold_affine."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear, nn.GroupNorm, nn.LeakyReLU, then the result added to itself."""

    def __init__(self, input_size, hidden_size, num_groups, eps=1e-5, negative_slope=0.01):
        super().__init__()
        self.fc = nn.Linear(input_size, hidden_size)
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=hidden_size, eps=eps)
        self.leaky_relu = nn.LeakyReLU(negative_slope=negative_slope)

    def forward(self, x):
        x = self.fc(x)
        x = self.gn(x)
        x = self.leaky_relu(x)
        x = x + x
        return x


batch_size = 256
input_size = 512
hidden_size = 512
num_groups = 32


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_groups]
