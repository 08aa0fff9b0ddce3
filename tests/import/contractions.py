import torch
import torch.nn as nn
import torch.nn.functional as F
B = 3
M = 6
K = 6
N = 4
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(K, N)
        self.norm = nn.LayerNorm([M, N])
        self.gn = nn.GroupNorm(2, M)
    def forward(self, x, w, bias, v):
        a = self.fc(x)                       # 3-D input
        b = torch.matmul(x, w)               # (B, M, K) @ (K, N)
        c = torch.addmm(bias, x[0], w, beta=0.5, alpha=2.0)
        d = torch.mv(w.t(), v[:N].clone() * 0 + v[0]) if False else torch.mv(x[1], v)
        e = self.norm(a + b)
        f = self.gn(a)
        g = F.linear(x, w.t())
        return a, b, c, d, e, f, g, torch.softmax(b, dim=0), torch.bmm(x, x.transpose(1, 2))
def get_inputs():
    return [torch.randn(B, M, K), torch.randn(K, N), torch.randn(M, N), torch.randn(K)]
def get_init_inputs():
    return []
