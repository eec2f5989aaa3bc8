"""The module face shared by the losses: two view batches or features plus a graph."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


class GraphLoss(torch.nn.Module):
    """Calls ``functional(z1, z2, edge_index=..., edge_weight=..., sample_id=..., **options)``.

    Subclasses set ``functional`` and store their hyper-parameters in ``self.options``
    (which also makes the ``repr``).
    """

    functional: Callable[..., Tensor]

    def __init__(self, **options) -> None:
        super().__init__()
        self.options = options

    def forward(
        self,
        z1: Tensor,
        z2: Tensor | None = None,
        *,
        edge_index: Tensor | None = None,
        edge_weight: Tensor | None = None,
        sample_id: Tensor | None = None,
    ) -> Tensor:
        return type(self).functional(
            z1,
            z2,
            edge_index=edge_index,
            edge_weight=edge_weight,
            sample_id=sample_id,
            **self.options,
        )

    def __getattr__(self, name: str):
        options = self.__dict__.get("options", {})
        if name in options:
            return options[name]
        return super().__getattr__(name)

    def extra_repr(self) -> str:
        return ", ".join(f"{key}={value!r}" for key, value in self.options.items())
