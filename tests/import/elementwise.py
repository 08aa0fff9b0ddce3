import torch
import torch.nn as nn
import torch.nn.functional as F
batch_size = 6
dim = 11
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.Hardtanh(-0.5, 0.5)
        self.elu = nn.ELU(0.7)
    def forward(self, x, y):
        a = F.gelu(x, approximate="tanh") + torch.sigmoid(y) * torch.tanh(x) - torch.exp(-x.abs())
        b = torch.log(x.abs() + 1) + torch.sqrt(y.abs()) + torch.rsqrt(y * y + 1.0) + F.leaky_relu(x, 0.2)
        c = torch.clamp(a, -1.0, 2.0) + self.act(b) + F.softplus(x) + F.silu(y) + self.elu(x) + F.selu(y)
        d = F.mish(x) + F.hardswish(y) + F.hardsigmoid(x) + torch.maximum(x, y) - torch.minimum(x, y)
        e = x.relu() ** 3 - (-y) + 1.0 / (x.abs() + 2) + (1 - x) + torch.sub(x, y, alpha=2) + F.softplus(y, beta=2)
        f = F.relu6(x * 4) + torch.clamp(x, min=0.1) + x.clamp(max=0.3) + y.square() + x.reciprocal().clamp(-3, 3)
        return a * b + c - d / (e.abs() + 1) + f
def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]
def get_init_inputs():
    return []
