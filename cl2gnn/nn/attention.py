from __future__ import annotations

import math
from functools import partial
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import scatter

from .._checks import one_of
from .._options import Distributed, Finite, OptionsChecked, TileSize, check_options
from .._registry import OPERATORS, Example
from .._validation import as_edge_index, check_features
from ..distributed import (
    Shard,
    checked_shard,
    inner_product,
    is_distributed,
    row_logsumexp,
)
from ..distributed.collectives import global_logsumexp
from . import _examples
from ._graph import edge_dot, normalized_graph

NORMALIZATIONS = ("negatives", "positives")


@OPERATORS.register
class AttentionAlignConv(OptionsChecked, MessagePassing):
    r"""Alignment with positive pairs reweighted by detached attention scores: a GAT-style
    layer (eqs. 14-16 of *A Message Passing Perspective on Learning Dynamics of Contrastive
    Learning*, Wang et al., ICLR 2023).

    Each augmentation edge :math:`e = (j \to i)` gets the weight
    :math:`c_e = \bar{A}_{ij}\, a_e` (``Ā`` as in :class:`AlignConv`), with attention
    computed from cosine similarities of attention features :math:`h` (``x`` by default;
    the reference code uses the backbone output) and detached:

    * ``normalize="negatives"`` (the paper): the affinity graph's transition probability
      relative to a uniform one, :math:`a_e = \exp(\beta \cos(h_i, h_j)) /
      \operatorname{mean}_{k \ne i} \exp(\beta \cos(h_i, h_k))` over the minibatch;
    * ``normalize="positives"`` (the PKU-ML reference code): a softmax over all positive
      edges, :math:`a_e = |E| \operatorname{softmax}_{e}(\beta \cos(h_i, h_j))`.

    Both give :math:`a \equiv 1` for ``beta=0``. With :math:`C_{ij} = c_e` and in-weights
    :math:`c_i = \sum_j C_{ij}` the energy and its exact step are

    .. math::
        E(X) = \sum_i c_i \|x_i\|^2 - \sum_{(j \to i)} c_e\, x_i^\top x_j, \qquad
        X' = X - \alpha \left(2 c \odot X - (C + C^\top) X\right).

    With ``stop_gradient=True`` the targets :math:`x_j` are detached:

    .. math::
        E(X) = \tfrac12 \sum_i c_i \|x_i\|^2 - \sum_{(j \to i)} c_e\, x_i^\top
        \operatorname{sg}(x_j), \qquad X' = (1 - \alpha c) \odot X + \alpha C X,

    i.e. attention aggregation :math:`C X` for ``step=1`` and row-normalised weights. For a
    regular graph and ``beta=0`` the symmetric energy equals ``AlignConv``'s.

    Args:
        step (float, optional): step size :math:`\alpha` (default: ``0.1``).
        beta (float, optional): inverse attention temperature :math:`\beta`
            (default: ``1.0``).
        normalize (str, optional): ``"negatives"`` or ``"positives"``
            (default: ``"negatives"``).
        stop_gradient (bool, optional): detach the targets (default: ``False``).
        tile_size (int, optional): block size of the ring over the negatives
            (default: ``1024``).
        distributed (str, optional): ``"gather"`` or ``"ring"``: the attention's
            normalisation (over negatives, or over positive edges) spans every rank's rows
            (:mod:`cl2gnn.distributed`; over negatives in ring mode in
            ``O(N d / P + tile²)`` memory per rank); the edges index this rank's rows. The
            attention is detached, so the step's gradient is the single-process one in
            either mode. Every rank's input checks are decided together: one rank's invalid
            input raises on every rank (default: ``None``).
        **kwargs (optional): additional arguments of
            :class:`torch_geometric.nn.conv.MessagePassing`.

    Shapes:
        - **input:** features :math:`(N, d)`, edge indices :math:`(2, E)`, edge weights
          :math:`(E)` *(optional)*, attention features ``h`` :math:`(N, d_h)` *(optional)*,
          precomputed ``attention`` :math:`(E)` from :meth:`attention` *(optional)*
        - **output:** features :math:`(N, d)`; :meth:`energy`: scalar;
          :meth:`attention`: :math:`(E)`
    """

    def __init__(
        self,
        step: Finite = 0.1,
        beta: Finite = 1.0,
        normalize: Annotated[str, one_of(*NORMALIZATIONS)] = "negatives",
        stop_gradient: bool = False,
        tile_size: TileSize = 1024,
        distributed: Distributed = None,
        **kwargs,
    ) -> None:
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        self.tile_size = tile_size
        self.step = step
        self.beta = beta
        self.normalize = normalize
        self.stop_gradient = stop_gradient
        self.distributed = distributed
        check_options(self)

    def reset_parameters(self) -> None:
        super().reset_parameters()

    @torch.no_grad()
    def attention(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        h: Tensor | None = None,
    ) -> Tensor:
        """The detached edge weights :math:`c_e = \\bar{A}_e a_e`, ordered as ``edge_index``."""
        edge_index, weight, h, shard = self._check(x, edge_index, edge_weight, h, None)
        return self._attention(x, edge_index, weight, h, shard)

    def _check(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None,
        h: Tensor | None,
        attention: Tensor | None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None, Shard | None]:
        """``(edge_index, Ā weights, h, shard)`` checked; without ``attention`` and across
        ranks, every rank's checks decided together before the attention's collectives
        (:func:`~cl2gnn.distributed.shard.checked_shard`)."""
        check_options(self)
        distributed = attention is None and is_distributed(self.distributed)

        def local() -> tuple[Tensor, Tensor | None, Tensor | None]:
            check_features(x)
            if attention is not None:
                checked, _ = as_edge_index(edge_index, edge_weight, x.size(0))
                if attention.shape != (checked.size(1),):
                    raise ValueError(
                        f"attention must have shape [E] = [{checked.size(1)}], "
                        f"got {tuple(attention.shape)}"
                    )
                return checked, None, None
            checked, weight = normalized_graph(x, edge_index, edge_weight)
            features = x if h is None else h
            check_features(features, "h")
            if features.size(0) != x.size(0):
                raise ValueError(f"h must have N = {x.size(0)} rows like x, got {features.size(0)}")
            if not distributed and self.normalize == "negatives" and x.size(0) < 2:
                raise ValueError("normalize='negatives' needs at least 2 rows")
            return checked, weight, features

        if not distributed:
            return (*local(), None)
        min_total = 2 if self.normalize == "negatives" else 1
        checked, shard = checked_shard(
            x, local, min_total, f"AttentionAlignConv ({self.distributed})"
        )
        return (*checked, shard)

    @torch.no_grad()
    def _attention(
        self, x: Tensor, edge_index: Tensor, weight: Tensor, h: Tensor, shard: Shard | None
    ) -> Tensor:
        h = F.normalize(h.to(x.dtype), dim=-1)
        dst = edge_index[1]
        score = self.beta * edge_dot(h, h, edge_index)
        if self.normalize == "negatives":  # over the keys of every rank when distributed
            if shard is not None:
                kernel = inner_product(self.beta)
                log_sum = row_logsumexp(
                    h, kernel, self.distributed, shard, stop_gradient=True, tile_size=self.tile_size
                )
                others = shard.total - 1
            else:
                log_sum = torch.logsumexp((self.beta * h @ h.T).fill_diagonal_(-math.inf), dim=1)
                others = x.size(0) - 1
            attn = (score - log_sum[dst] + math.log(others)).exp()
        else:  # a softmax over the positive edges of every rank when distributed
            log_sum, edges = torch.logsumexp(score, dim=0), score.numel()
            if shard is not None:
                log_sum, edges = global_logsumexp(score)
            attn = (score - log_sum).exp() * edges
        return weight * attn

    def energy(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        h: Tensor | None = None,
        attention: Tensor | None = None,
    ) -> Tensor:
        edge_index, coef, in_coef = self._coefficients(x, edge_index, edge_weight, h, attention)
        targets = x.detach() if self.stop_gradient else x
        norm_scale = 0.5 if self.stop_gradient else 1.0
        pair = (coef * edge_dot(x, targets, edge_index)).sum()
        return norm_scale * (in_coef * (x * x).sum(-1)).sum() - pair

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        h: Tensor | None = None,
        attention: Tensor | None = None,
    ) -> Tensor:
        edge_index, coef, in_coef = self._coefficients(x, edge_index, edge_weight, h, attention)
        gathered = self.propagate(edge_index, x=x, edge_weight=coef)
        if self.stop_gradient:
            return (1 - self.step * in_coef)[:, None] * x + self.step * gathered
        scattered = self.propagate(edge_index.flip(0), x=x, edge_weight=coef)
        grad = 2 * in_coef[:, None] * x - gathered - scattered
        return x - self.step * grad

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j

    def _coefficients(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None,
        h: Tensor | None,
        attention: Tensor | None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        edge_index, weight, h, shard = self._check(x, edge_index, edge_weight, h, attention)
        if attention is None:
            attention = self._attention(x, edge_index, weight, h, shard)
        attention = attention.detach().to(x.dtype)
        in_coef = scatter(attention, edge_index[1], 0, dim_size=x.size(0), reduce="sum")
        return edge_index, attention, in_coef

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(step={self.step}, beta={self.beta}, "
            f"normalize={self.normalize!r}, stop_gradient={self.stop_gradient})"
        )

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        x = _examples.features(n, d, generator)
        edge_index, weight = _examples.weighted_graph(n, generator)
        h = _examples.features(n, 3, generator)
        positives = partial(cls, step=0.3, beta=2.0, normalize="positives", stop_gradient=True)
        return {
            "negatives": Example(partial(cls, step=0.3, beta=2.0), (x, edge_index, weight)),
            "positives, stop_gradient": Example(positives, (x, edge_index), {"h": h}),
        }
