import torch
import torch.nn as nn


class Model(nn.Module):
    """Matmul of non-square A (M, K) and B (K, N): tile-multiple sizes hide a missing edge guard."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 256
K = 512
N = 384


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
