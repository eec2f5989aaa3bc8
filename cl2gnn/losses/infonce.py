from __future__ import annotations

import contextlib
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor
from typing_extensions import Unpack

from .._checks import integer, one_of, optional
from .._options import Distributed, Temperature, checks_options
from .._registry import PAIR_LOSSES
from ..nn import ContrastiveConv
from ..nn._dispatch import check_matmul_dtype
from ..nn.tiled import MatmulDtype, rows_within
from ..nn.uniform import IMPLEMENTATIONS
from . import _tiling
from ._inputs import Graph, GraphLoss, shard_of_views, share_of_mean
from ._operators import shared_operator


def _joint(
    distributed: str | None, num_keys: int | None, implementation: str, matmul_dtype: str | None
) -> None:
    # global negatives come from the distributed modes alone: no sampled keys, no Triton
    if distributed is not None and (num_keys is not None or implementation == "triton"):
        raise ValueError("distributed takes neither num_keys nor implementation='triton'")
    check_matmul_dtype(matmul_dtype, implementation, distributed)


@checks_options(joint=_joint)
def info_nce(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    temperature: Temperature = 0.5,
    normalize: bool = True,
    positive_in_denominator: bool = True,
    implementation: Annotated[str, one_of(*IMPLEMENTATIONS)] = "auto",
    num_keys: Annotated[int | None, optional(integer(1))] = None,
    distributed: Distributed = None,
    matmul_dtype: MatmulDtype = None,
    **graph: Unpack[Graph],
) -> Tensor:
    """Functional form of :class:`InfoNCELoss`."""
    (x, edge_index, edge_weight), shard = shard_of_views(z1, z2, graph, distributed, "InfoNCELoss")
    if normalize:
        x = F.normalize(x, dim=-1)
    conv = shared_operator(
        ContrastiveConv,
        temperature=float(temperature),
        positive_in_denominator=bool(positive_in_denominator),
        implementation=implementation,
        tile_size=_tiling.TILE,
        distributed=distributed,
        matmul_dtype=matmul_dtype,
    )
    keys = _sample_keys(x.size(0), num_keys, x.device)
    # unit rows (up to rounding): the tiles' bound on the logits without reading x back
    with rows_within(1.0 + 1e-3) if normalize else contextlib.nullcontext():
        energy = conv.energy(x, edge_index, edge_weight, keys)
    return share_of_mean(energy, x.size(0), shard)


def _sample_keys(n: int, num_keys: int | None, device: torch.device) -> Tensor | None:
    """``num_keys`` distinct rows of ``n`` drawn uniformly (torch's global generator, so
    seeded runs repeat); ``None`` (the complete graph) when all rows would be drawn."""
    if num_keys is None or num_keys >= n:
        return None
    return torch.randperm(n, device=device)[:num_keys]


@PAIR_LOSSES.register
class InfoNCELoss(GraphLoss):
    r"""InfoNCE / NT-Xent (SimCLR, Chen et al., ICML 2020), composed as
    ``AlignConv.energy / τ + UniformAttention.energy`` (Proposition 1 of the
    message-passing paper, Wang et al., ICLR 2023).

    For stacked, L2-normalised features :math:`x` (``N = 2B`` rows for two views),
    :math:`S_{ij} = x_i^\top x_j / \tau` and the augmentation graph :math:`\bar{A}`:

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_i \Big(\log \sum_{j \ne i} e^{S_{ij}}
        - \sum_{(k \to i)} \bar{A}_{ik} S_{ik}\Big),

    the mean over all anchors with the positive kept in the denominator: lightly's
    ``NTXentLoss`` and solo-learn's ``simclr_loss_func``. With several positives per
    anchor (``sample_id``) the positive term averages them (regular graphs);
    ``positive_in_denominator=False`` drops the positives from the sum (decoupled
    contrastive learning).

    Args:
        temperature (float, optional): :math:`\tau` (default: ``0.5``).
        normalize (bool, optional): L2-normalise the inputs (default: ``True``).
        positive_in_denominator (bool, optional): (default: ``True``).
        implementation (str, optional): the uniformity term ``"dense"`` (``O(N²)``
            memory), ``"tiled"`` (exact, ``O(N d)`` memory), ``"triton"`` (the same, fused
            CUDA kernels; positives in the denominator only) or ``"auto"``, the fastest
            exact one for the device and size (on CUDA dense while it fits in memory, then
            Triton; on the CPU tiled from a measured size on; see
            :func:`~cl2gnn.nn._dispatch.exact_form`) (default: ``"auto"``).
        num_keys (int, optional): the uniformity term over this many rows drawn afresh
            at each call instead of all :math:`N` (the sampled affinity graph of
            :class:`~cl2gnn.nn.UniformAttention`, unbiased for the partition sum,
            ``N·num_keys`` logits instead of ``N²``); ``None`` or ``>= N`` is the exact
            loss (default: ``None``).
        distributed (str, optional): under an initialised process group of ``P`` ranks,
            each passing its own views, the loss over the *global* batch: every anchor
            against the keys of every rank, by ``"gather"`` (keys all-gathered with
            autograd, ``N/P × N`` logits per rank) or ``"ring"`` (keys passed rank to
            rank, ``O(N d / P + tile²)`` memory per rank); see :mod:`cl2gnn.distributed`.
            Positives (the two views, ``edge_index``, ``sample_id``) index this rank's
            rows. Each rank returns ``P ×`` its anchors' share of the global loss
            (lightly's convention): the mean over the ranks is the global loss, and DDP's
            gradient averaging gives exactly the single-process gradient. ``None``: this
            process's batch only (default: ``None``).
        matmul_dtype (str, optional): ``"bfloat16"``: the uniformity term multiplies
            float32 rows in bfloat16 with float32 accumulation, in the torch tiles on the
            CPU (oneDNN's bf16 GEMM, several times faster; values and gradients within a
            few bfloat16 roundings, :mod:`~cl2gnn.nn.tiled`), in the Triton kernels on
            CUDA; with ``implementation`` ``"auto"``, ``"tiled"`` or ``"triton"``, not
            ``distributed``. ``None``: the rows' dtype, exact (default: ``None``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)`, or ``x`` :math:`(N, d)` with
          ``edge_index`` :math:`(2, E)` (+ ``edge_weight`` :math:`(E)`) or ``sample_id``
          :math:`(N)`
        - **output:** scalar

    Examples:
        >>> loss_fn = InfoNCELoss(temperature=0.5)
        >>> z1, z2 = torch.randn(256, 128), torch.randn(256, 128)
        >>> loss = loss_fn(z1, z2)
        >>> # kNN positives on one batch of features
        >>> x = torch.randn(512, 128)
        >>> loss = loss_fn(x, edge_index=knn_graph(x, k=5, symmetrize="union"))
        >>> # uniformity over 256 keys drawn afresh per call (N·256 logits, not N²)
        >>> loss = InfoNCELoss(num_keys=256)(z1, z2)
        >>> # under torchrun: negatives from every rank's batch, exact gradients with DDP
        >>> loss = InfoNCELoss(distributed="ring")(z1_local, z2_local)
    """

    functional = staticmethod(info_nce)
