"""The built-in encoder's activations, by the name a configuration gives
(:data:`~cl2gnn.node.config.ACTIVATIONS`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


class MeanRReLU(torch.nn.Module):
    """``F.rrelu`` as GCA's code calls it, with its default ``training=False``: a leaky ReLU
    of slope ``(lower + upper) / 2``, in training too (``nn.RReLU`` draws a random slope per
    element while training). The ``"rrelu"`` configurations are GCA's (Computers, CS,
    Physics)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, training=False)


ACTIVATION_MODULES = {  # config.ACTIVATIONS, each name's module
    "relu": torch.nn.ReLU,
    "prelu": torch.nn.PReLU,
    "rrelu": MeanRReLU,
    "elu": torch.nn.ELU,
    "none": torch.nn.Identity,
}
