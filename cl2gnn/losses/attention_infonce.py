from __future__ import annotations

from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import scatter
from typing_extensions import Unpack

from .._checks import one_of
from .._options import Distributed, Finite, Temperature, checks_options
from .._registry import PAIR_LOSSES
from .._validation import check_features
from ..nn import AttentionAlignConv
from ..nn.attention import NORMALIZATIONS
from . import _tiling
from ._inputs import Graph, GraphLoss, resolve_views, share_of_mean, views_shard
from ._operators import shared_operator, uniform_attention


@checks_options()
def attention_info_nce(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    h1: Tensor | None = None,
    h2: Tensor | None = None,
    temperature: Temperature = 0.5,
    beta: Finite = 1.0,
    normalize: Annotated[str, one_of(*NORMALIZATIONS)] = "negatives",
    distributed: Distributed = None,
    **graph: Unpack[Graph],
) -> Tensor:
    """Functional form of :class:`AttentionInfoNCELoss`."""

    def check(rows: int) -> tuple:
        resolved = resolve_views(z1, z2, **graph, min_rows=rows)
        if z2 is not None and (h1 is None) != (h2 is None):
            raise ValueError("with two view batches pass both h1 and h2, or neither")
        if z2 is None and h2 is not None:
            raise ValueError("h2 goes with z2; pass the attention features of x as h1")
        for name, h in (("h1", h1), ("h2", h2)):
            if h is not None:
                check_features(h, name, rows)
        return resolved

    (x, edge_index, edge_weight), shard = views_shard(
        z1, z2, distributed, check, "AttentionInfoNCELoss"
    )
    h = h1 if h2 is None else torch.cat([h1, h2])
    x = F.normalize(x, dim=-1)
    align = shared_operator(
        AttentionAlignConv,
        beta=float(beta),
        normalize=normalize,
        tile_size=_tiling.TILE,
        distributed=distributed,
    )
    coef = align.attention(x, edge_index, edge_weight, h=h)
    anchor_weight = scatter(coef, edge_index[1], 0, dim_size=x.size(0), reduce="sum")
    uniform = uniform_attention(temperature, distributed)
    energy = align.energy(x, edge_index, edge_weight, attention=coef) / temperature
    energy = energy + uniform.energy(x, weight=anchor_weight)
    return share_of_mean(energy, x.size(0), shard)


@PAIR_LOSSES.register
class AttentionInfoNCELoss(GraphLoss):
    r"""InfoNCE whose positive pairs are reweighted by detached attention (eq. 15 of *A
    Message Passing Perspective on Learning Dynamics of Contrastive Learning*, Wang et al.,
    ICLR 2023), composed as ``AttentionAlignConv.energy / τ`` plus the
    ``UniformAttention`` energy weighted per anchor.

    Each positive edge :math:`e = (k \to i)` carries :math:`c_e = \bar{A}_{ik} a_e`
    (see :class:`~cl2gnn.nn.AttentionAlignConv`), and it weights the anchor's whole term:

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_i \Big(c_i \log \sum_{j \ne i} e^{S_{ij}}
        - \sum_{(k \to i)} c_e S_{ik}\Big), \qquad c_i = \sum_{(k \to i)} c_e.

    With ``normalize="positives"`` and two views this is the PKU-ML reference code's loss
    (``beta=1``); ``beta=0`` gives :class:`InfoNCELoss`. The attention features ``h1, h2``
    (e.g. backbone outputs) default to the projections.

    Args:
        temperature (float, optional): :math:`\tau` (default: ``0.5``).
        beta (float, optional): attention sharpness :math:`\beta` (default: ``1.0``).
        normalize (str, optional): ``"negatives"`` (paper) or ``"positives"`` (reference
            code) (default: ``"negatives"``).
        distributed (str, optional): ``"gather"`` or ``"ring"``: the global batch of every
            rank, as in :class:`InfoNCELoss` (the attention's normalisation spans the ranks
            too; each rank returns ``world_size ×`` its share) (default: ``None``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)` (+ ``h1, h2`` :math:`(B, d_h)`), or ``x``
          :math:`(N, d)` with ``edge_index``/``sample_id`` (+ ``h1`` :math:`(N, d_h)`)
        - **output:** scalar

    Examples:
        >>> loss_fn = AttentionInfoNCELoss(temperature=0.5, beta=1.0)
        >>> loss = loss_fn(proj1, proj2, h1=backbone1, h2=backbone2)
    """

    functional = staticmethod(attention_info_nce)

    def forward(
        self,
        z1: Tensor,
        z2: Tensor | None = None,
        *,
        h1: Tensor | None = None,
        h2: Tensor | None = None,
        **graph: Unpack[Graph],
    ) -> Tensor:
        return self.call_functional(z1, z2, h1=h1, h2=h2, **graph)
