import torch
import torch.nn as nn


class Model(nn.Module):
    """Softshrink: x - lambd above lambd, x + lambd below -lambd, 0 between."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.softshrink(x, lambd=self.lambd)


batch_size = 16
dim = 4096


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
