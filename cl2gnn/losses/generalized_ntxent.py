from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from typing_extensions import Unpack

from .._checks import callable_or_none
from .._options import Temperature, checks_options
from .._registry import PAIR_LOSSES
from . import _tiling
from ._inputs import Graph, GraphLoss, resolve_views
from ._tiling import edges_by_target, row_tiled_sum, self_mask


@checks_options()
def generalized_nt_xent(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    temperature: Temperature = 0.5,
    psi: Annotated[Callable[[Tensor], Tensor] | None, callable_or_none] = None,
    eta: Annotated[Callable[[Tensor], Tensor] | None, callable_or_none] = None,
    normalize: bool = True,
    **graph: Unpack[Graph],
) -> Tensor:
    """Functional form of :class:`GeneralizedNTXentLoss`."""
    psi = torch.log1p if psi is None else psi
    eta = (lambda t: torch.exp(-t / temperature)) if eta is None else eta
    x, edge_index, edge_weight = resolve_views(z1, z2, **graph)
    if normalize:
        x = F.normalize(x, dim=-1)
    n, tile = x.size(0), _tiling.TILE
    sq = (x * x).sum(-1)
    edge_index, weight = gcn_norm(edge_index, edge_weight, n, False, False, dtype=x.dtype)
    groups = edges_by_target(edge_index, n, tile)

    def term(start: int, end: int) -> Tensor:
        dist2 = sq[start:end, None] + sq[None, :] - 2 * x[start:end] @ x.T
        similarity = eta(0.5 * dist2.clamp_(min=0))
        ids = groups[start // tile]
        local, src = edge_index[1, ids] - start, edge_index[0, ids]
        excluded = self_mask(start, end, n, x.device)
        excluded[local, src] = True
        negative_sum = similarity.masked_fill(excluded, 0.0).sum(1)
        return (weight[ids] * psi(negative_sum[local] / similarity[local, src])).sum()

    return row_tiled_sum(term, n, tile) / n


@PAIR_LOSSES.register
class GeneralizedNTXentLoss(GraphLoss):
    r"""Generalised NT-Xent (Calder & Lee): a pluggable outer function :math:`\Psi` and
    similarity profile :math:`\eta` of the half squared distance
    :math:`t(a, b) = \frac12 \|a - b\|^2` (``1 - cos`` on the sphere):

    .. math::
        \mathcal{L} = \mathbb{E}_x\, \Psi\!\left(
        \frac{\sum_{y} \eta(t(x, y))}{\eta(t(x, x^+))}\right),

    the sum over the anchor's negatives (rows that are neither itself nor a positive), the
    expectation over anchors (and the ``Ā``-weighted positives of each). The defaults
    :math:`\Psi(s) = \log(1 + s)`, :math:`\eta(t) = e^{-t/\tau}` give NT-Xent
    (:class:`InfoNCELoss`) exactly.

    Args:
        temperature (float, optional): :math:`\tau` of the default :math:`\eta`
            (default: ``0.5``).
        psi (callable, optional): :math:`\Psi`, elementwise on tensors (default:
            ``torch.log1p``).
        eta (callable, optional): :math:`\eta`, elementwise on tensors (default:
            ``exp(-t / temperature)``).
        normalize (bool, optional): L2-normalise the inputs (default: ``True``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)`, or ``x`` :math:`(N, d)` with
          ``edge_index`` or ``sample_id``
        - **output:** scalar

    Examples:
        >>> loss = GeneralizedNTXentLoss(psi=lambda s: s)(z1, z2)  # Ψ(s) = s
    """

    functional = staticmethod(generalized_nt_xent)
