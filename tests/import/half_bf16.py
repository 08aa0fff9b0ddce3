"""A bf16 block: linear, gelu, softmax; the statistics in f32, a conversion back to bf16 inside."""
import torch
import torch.nn as nn

N = 8
D = 16
H = 12


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(D, H).to(torch.bfloat16)

    def forward(self, x):
        y = torch.nn.functional.gelu(self.fc(x))
        s = torch.softmax(y.float(), dim=1)
        r = (s * 3.0).to(torch.bfloat16) * 1.5  # rounded twice: bf16(bf16(s * 3) * 1.5)
        return s.to(torch.bfloat16), y.sum(dim=1), r


def get_inputs():
    return [torch.randn(N, D, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
