"""The projection heads of the methods on GRACE's scheme."""

from __future__ import annotations

import torch
from torch import Tensor


class ProjectionHead(torch.nn.Module):
    """GRACE's head: ``fc2(elu(fc1(h)))``."""

    def __init__(self, hidden: int, proj_hidden: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, proj_hidden)
        self.fc2 = torch.nn.Linear(proj_hidden, hidden)

    def forward(self, h: Tensor) -> Tensor:
        return self.fc2(torch.nn.functional.elu(self.fc1(h)))
