import torch
import torch.nn as nn
B = 4
R = 5
D = 6
class Model(nn.Module):
    def forward(self, x):
        s = x.sum(dim=1, keepdim=True)
        m = torch.mean(x, dim=(1, 2))
        a = torch.amax(x, dim=2)
        values, indices = torch.max(x, dim=1)[0], x.max(1).indices
        mins = x.min(dim=2).values
        arg = torch.argmin(x, dim=2)
        v = x.var(dim=1)
        sd = torch.std(x, dim=2, unbiased=False)
        lse = torch.logsumexp(x, dim=1)
        p = (x * 0.1 + 1).prod(dim=2)
        total = x.sum()
        running = torch.cumsum(x, dim=1)
        growth = (x * 0.1 + 1).cumprod(2)
        return s, m, a, values, indices, mins, arg, v, sd, lse, p, total, running, growth
def get_inputs():
    return [torch.randn(B, R, D)]
def get_init_inputs():
    return []
