from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._dense import off_diagonal, positive_mask
from ._views import resolve_views

FORMS = ("paper", "squared")


def random_walk_loss(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    edge_index: Tensor | None = None,
    edge_weight: Tensor | None = None,
    sample_id: Tensor | None = None,
    temperature: float = 0.5,
    form: str = "paper",
) -> Tensor:
    """Functional form of :class:`RandomWalkLoss`."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    x, edge_index, _ = resolve_views(z1, z2, edge_index, edge_weight, sample_id)
    x = F.normalize(x, dim=-1)
    n = x.size(0)
    others = off_diagonal(n, x.device)
    logits = (x @ x.T / temperature).masked_fill(~others, float("-inf"))
    walk = torch.softmax(logits, dim=1)  # P = D^{-1} W with W_ii = 0
    positive = positive_mask(edge_index, n)
    negative = others & ~positive
    miss, hit = 1 - walk, walk
    if form == "squared":
        miss, hit = miss.square(), hit.square()
    return (miss[positive].sum() + hit[negative].sum()) / n


class RandomWalkLoss(torch.nn.Module):
    r"""The random-walk Laplacian loss: each anchor's one-step random walk on the affinity
    graph should land on its augmentation-graph neighbours (*Contrastive Learning is
    Spectral Clustering on Similarity Graph*, Tan et al., ICLR 2024).

    With :math:`W_{ij} = \exp(f_i^\top f_j / \tau)`, :math:`W_{ii} = 0`,
    :math:`P = D^{-1} W` and :math:`i \sim j` the augmentation graph:

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_{i \ne j} \mathbb{1}[i \sim j](1 - P_{ij})
        + \mathbb{1}[i \not\sim j] P_{ij}

    (``form="paper"``), or with both terms squared (``form="squared"``, the reference
    code's form). Features are L2-normalised; edge weights are ignored (adjacency only).

    Args:
        temperature (float, optional): :math:`\tau` (default: ``0.5``).
        form (str, optional): ``"paper"`` or ``"squared"`` (default: ``"paper"``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)`, or ``x`` :math:`(N, d)` with
          ``edge_index`` or ``sample_id``
        - **output:** scalar

    Examples:
        >>> loss = RandomWalkLoss(temperature=0.5)(z1, z2)
    """

    def __init__(self, temperature: float = 0.5, form: str = "paper") -> None:
        super().__init__()
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        self.temperature, self.form = temperature, form

    def forward(
        self,
        z1: Tensor,
        z2: Tensor | None = None,
        *,
        edge_index: Tensor | None = None,
        edge_weight: Tensor | None = None,
        sample_id: Tensor | None = None,
    ) -> Tensor:
        return random_walk_loss(
            z1,
            z2,
            edge_index=edge_index,
            edge_weight=edge_weight,
            sample_id=sample_id,
            temperature=self.temperature,
            form=self.form,
        )

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}, form={self.form!r}"
