from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from typing_extensions import Unpack

from .._checks import one_of, open_unit_interval, optional
from .._checks import temperature as temperature_check
from .._options import Distributed, Positive, Temperature, checks_options
from .._registry import PAIR_LOSSES
from ..distributed import Shard, gather_rows, row_logsumexp
from . import _tiling
from ._inputs import Graph, GraphLoss, shard_of_views, share_of_mean
from ._tiling import edges_by_target, row_tiled_sum

MIXTURES = (None, "simple", "concat")
MIXTURE_FORMS = ("loss", "kernel")


def log_kernel(x: Tensor, y: Tensor, gamma: float, temperature: float) -> Tensor:
    r"""``log K(x_i, y_j) = -‖x_i - y_j‖^γ / τ`` for all pairs (``[N, M]``).

    The squared distance is clamped at ``1e-12`` so that ``γ < 2`` has a finite gradient at
    coincident points.
    """
    dist2 = ((x * x).sum(-1)[:, None] + (y * y).sum(-1)[None, :] - 2 * x @ y.T).clamp_(min=1e-12)
    return (
        dist2.pow_(gamma / 2).mul_(-1.0 / temperature)
        if gamma != 2
        else dist2.mul_(-1.0 / temperature)
    )


@checks_options()
def kernel_info_nce(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    gamma: Positive = 1.0,
    temperature: Temperature = 0.5,
    mixture: Annotated[str | None, one_of(*MIXTURES)] = None,
    mixture_form: Annotated[str, one_of(*MIXTURE_FORMS)] = "loss",
    lam: Annotated[float, open_unit_interval()] = 0.5,
    gamma2: Positive = 2.0,
    temperature2: Annotated[float | None, optional(temperature_check)] = None,
    distributed: Distributed = None,
    **graph: Unpack[Graph],
) -> Tensor:
    """Functional form of :class:`KernelInfoNCELoss`."""
    (x, edge_index, edge_weight), shard = shard_of_views(
        z1, z2, graph, distributed, "KernelInfoNCELoss"
    )

    def contrast(x: Tensor, kernel) -> Tensor:
        return _graph_contrastive(x, kernel, edge_index, edge_weight, distributed, shard)

    if mixture is None:
        return contrast(
            F.normalize(x, dim=-1), partial(log_kernel, gamma=gamma, temperature=temperature)
        )
    temperature2 = temperature if temperature2 is None else temperature2
    if mixture == "simple":
        first = second = F.normalize(x, dim=-1)
    else:
        if x.size(1) < 2:
            raise ValueError("mixture='concat' splits the features in two: needs d >= 2")
        half = x.size(1) // 2
        first, second = F.normalize(x[:, :half], dim=-1), F.normalize(x[:, half:], dim=-1)
    width = first.size(1)

    def kernel1(q: Tensor, k: Tensor) -> Tensor:
        return log_kernel(q[:, :width], k[:, :width], gamma, temperature)

    def kernel2(q: Tensor, k: Tensor) -> Tensor:
        return log_kernel(q[:, width:], k[:, width:], gamma2, temperature2)

    both = torch.cat([first, second], dim=1)  # one tensor so the kernels share row tiles
    if mixture_form == "loss":
        return lam * contrast(both, kernel1) + (1 - lam) * contrast(both, kernel2)

    def mixed(q: Tensor, k: Tensor) -> Tensor:
        return torch.logaddexp(kernel1(q, k) + math.log(lam), kernel2(q, k) + math.log(1 - lam))

    return contrast(both, mixed)


def _graph_contrastive(
    x: Tensor,
    kernel: Callable[[Tensor, Tensor], Tensor],
    edge_index: Tensor,
    edge_weight: Tensor | None,
    distributed: str | None,
    shard: Shard | None,
) -> Tensor:
    r"""``mean_i [ LSE_{j != i} L_ij - Σ_{(k -> i)} Ā_ik L_ik ]`` with ``L = kernel(x, x)``.

    ``Ā`` is the symmetric-normalised augmentation graph, so for a regular graph (views of
    a sample) the positive term is the average over an anchor's positives. This is the
    InfoNCE form that ``ContrastiveConv`` composes for the inner-product kernel.

    With a ``shard`` (this rank's rows of the global batch, see
    :func:`~cl2gnn.losses._inputs.views_shard`) the keys are every rank's rows,
    all-gathered (``distributed="gather"``) or passed round the ranks
    (``"ring"``), and the result is ``world_size ×`` this rank's share of the mean.
    """
    n, tile = x.size(0), _tiling.TILE
    edge_index, weight = gcn_norm(edge_index, edge_weight, n, add_self_loops=False, dtype=x.dtype)
    groups = edges_by_target(edge_index, n, tile)
    ring = shard is not None and distributed == "ring"
    keys, offset = x, 0  # the ring's keys travel separately: the tiles see the local rows
    if shard is not None and not ring:
        keys, offset = gather_rows(x, shard), shard.offset

    def term(start: int, end: int) -> Tensor:
        logits = kernel(x[start:end], keys)
        ids = groups[start // tile]
        local, src = edge_index[1, ids] - start, edge_index[0, ids] + offset
        positive = (weight[ids] * logits[local, src]).sum()
        if ring:
            return -positive
        # the positives are gathered: mask in place, no N-wide copy
        logits[:, offset + start : offset + end].fill_diagonal_(float("-inf"))
        lse = torch.logsumexp(logits, dim=1)
        return torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse)).sum() - positive

    total = row_tiled_sum(term, n, tile)
    if ring:
        lse = row_logsumexp(x, kernel, "ring", shard, tile_size=tile)
        total = total + torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse)).sum()
    return share_of_mean(total, n, shard)


@PAIR_LOSSES.register
class KernelInfoNCELoss(GraphLoss):
    r"""Kernel-InfoNCE (*Contrastive Learning is Spectral Clustering on Similarity Graph*,
    Tan et al., ICLR 2024): InfoNCE with the kernel
    :math:`K(x, y) = \exp(-\|x - y\|^\gamma / \tau)` on L2-normalised features,

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_i \Big(\log \sum_{j \ne i} K(x_i, x_j)
        - \sum_{(k \to i)} \bar{A}_{ik} \log K(x_i, x_k)\Big).

    ``gamma=1`` is the Laplacian kernel, ``gamma=0.5`` the exponent-0.5 kernel, and
    ``gamma=2`` the Gaussian kernel, equal on the sphere to InfoNCE at temperature
    :math:`\tau/2`. Mixtures of a first kernel (``gamma``, ``temperature``) and a second
    (``gamma2=2``, ``temperature2``):

    * ``mixture="simple"``: both kernels on the whole feature;
    * ``mixture="concat"``: the first kernel on the first half of the features, the second
      on the second half, each half normalised separately;
    * ``mixture_form="loss"``: :math:`\lambda C_1 + (1-\lambda) C_2`, a sum of two losses
      (what the paper's experiments ran); ``"kernel"``: one InfoNCE with the kernel
      :math:`\lambda K_1 + (1-\lambda) K_2` (what its theory writes).

    Args:
        gamma (float, optional): exponent of the (first) kernel (default: ``1.0``).
        temperature (float, optional): its temperature (default: ``0.5``).
        mixture (str, optional): ``None``, ``"simple"`` or ``"concat"`` (default: ``None``).
        mixture_form (str, optional): ``"loss"`` or ``"kernel"`` (default: ``"loss"``).
        lam (float, optional): mixture weight :math:`\lambda \in (0, 1)` (default: ``0.5``).
        gamma2 (float, optional): exponent of the second kernel (default: ``2.0``).
        temperature2 (float, optional): its temperature (default: ``temperature``).
        distributed (str, optional): ``"gather"`` or ``"ring"``: the keys span every rank's
            rows, as in :class:`InfoNCELoss` (each rank returns ``world_size ×`` its share)
            (default: ``None``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)`, or ``x`` :math:`(N, d)` with
          ``edge_index`` or ``sample_id``
        - **output:** scalar

    Examples:
        >>> loss_fn = KernelInfoNCELoss(gamma=1.0, temperature=0.5)  # Laplacian kernel
        >>> loss = loss_fn(z1, z2)
        >>> mix = KernelInfoNCELoss(mixture="concat", temperature=0.5, temperature2=0.2)
    """

    functional = staticmethod(kernel_info_nce)
