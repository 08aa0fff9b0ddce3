import torch
import torch.nn as nn
import torch.nn.functional as F
N = 7
C = 5
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ce = nn.CrossEntropyLoss(reduction="sum")
    def forward(self, logits, target, other):
        a = F.nll_loss(F.log_softmax(logits, dim=1), target)
        b = self.ce(logits, target)
        c = F.cross_entropy(logits * 2, target, reduction="none")
        d = F.mse_loss(logits, other, reduction="sum") + F.l1_loss(logits, other)
        return a, b, c, d
def get_inputs():
    return [torch.randn(N, C), torch.randint(0, C, (N,)), torch.randn(N, C)]
def get_init_inputs():
    return []
