"""CCA-SSG's loss: invariance between two views' standardised embeddings plus the
decorrelation of their dimensions."""

from __future__ import annotations

from typing import Annotated

import torch
from torch import Tensor

from .._checks import non_negative
from .._options import Distributed, checks_options
from .._validation import check_features, check_same_shape
from ..distributed import all_reduce_sum, is_distributed, shard_of
from ..graphs import cached_pair_graph
from ..nn import AlignConv
from ._inputs import FunctionalLoss
from ._operators import shared_operator


def standardize(h: Tensor) -> Tensor:
    """Each column to zero mean and unit (unbiased) standard deviation over the rows; a
    constant column (a dead unit in a small batch) stays zero instead of dividing by 0."""
    return (h - h.mean(0)) / h.std(0).clamp(min=torch.finfo(h.dtype).eps)


def standardize_across_ranks(h: Tensor, n: int) -> Tensor:
    """:func:`standardize` of this rank's rows of every view ``h`` ``(views, rows, d)`` by
    the columns' statistics over every rank's rows, ``n`` in all (differentiable)."""
    centred = h - all_reduce_sum(h.sum(1, keepdim=True)) / n
    variance = all_reduce_sum(centred.square().sum(1, keepdim=True)) / (n - 1)
    # clamped before the square root: a dead unit's zero variance would give sqrt a 0/0
    # gradient (NaN), which torch.std masks
    return centred / variance.clamp(min=torch.finfo(h.dtype).eps ** 2).sqrt()


def node_views(h1: Tensor, h2: Tensor, distributed: str | None, what: str):
    """The checks and the shard of two views' node embeddings that a loss normalises per
    column over the nodes (of every rank under ``distributed``): ``(N, d, shard)``, ``N``
    over all ranks, ``shard`` ``None`` in one process."""
    check_features(h1, "h1")
    check_features(h2, "h2")
    check_same_shape(h1, h2, ("h1", "h2"))
    n, d = h1.shape
    shard = shard_of(h1, min_total=2) if is_distributed(distributed) else None
    if shard is None and n < 2:
        raise ValueError(f"{what} over the nodes: needs at least 2, got {n}")
    return (n if shard is None else shard.total), d, shard


@checks_options()
def cca_ssg_loss(
    h1: Tensor,
    h2: Tensor,
    decorrelation: Annotated[float, non_negative] = 1e-3,
    distributed: Distributed = None,
) -> Tensor:
    r"""CCA-SSG's loss on the two views' embeddings, as the authors' code computes it: with
    :math:`Z_v` the column-standardised :math:`H_v` and :math:`C = Z_1^\top Z_2 / N`,
    :math:`C_v = Z_v^\top Z_v / N`,

    .. math::
        \mathcal{L} = -\operatorname{tr}(C)
        + \lambda \big(\|I - C_1\|_F^2 + \|I - C_2\|_F^2\big).

    The invariance term is half the paper's :math:`\|\tilde Z_1 - \tilde Z_2\|_F^2`
    (:math:`\tilde Z = Z / \sqrt{N}`) less a constant, since standardised columns have a
    fixed norm: :class:`~cl2gnn.nn.AlignConv`'s energy on the pair graph of the two views'
    rows, ``Σ_i ‖z̃1_i - z̃2_i‖²``. The decorrelation acts on the :math:`d \times d` feature
    Gram, whose non-zero spectrum is that of the :math:`N \times N` affinity Gram of
    :class:`~cl2gnn.losses.SpectralContrastiveLoss`'s uniformity term.

    With ``distributed`` (``"gather"`` or ``"ring"``, alike here) under a process group of
    several ranks, each rank passes its rows of the global batch (any shares, one row or
    more each) and the loss is that of the union of every rank's rows: the columns'
    means and standard deviations over all :math:`N` rows, the invariance and the
    :math:`d \times d` Grams summed over the ranks (three all-reduces of :math:`O(d^2)`,
    nothing of size :math:`N` exchanged). Every rank returns the global loss, i.e.
    ``world_size ×`` an equal share of it (:mod:`cl2gnn.distributed`'s convention): the
    mean over ranks is the global loss, and the gradient on a rank's rows is
    ``world_size ×`` the single-process one, which DDP's average over ranks makes exact.

    Functional form of :class:`CCASSGLoss`.

    Shapes: ``h1, h2`` :math:`(N, d)`, :math:`N \ge 2` (over all ranks); output: scalar.
    """
    n, d, shard = node_views(h1, h2, distributed, "CCA-SSG standardises")
    if shard is None:
        z1, z2 = standardize(h1) / n**0.5, standardize(h2) / n**0.5
    else:
        z1, z2 = standardize_across_ranks(torch.stack([h1, h2]), n) / n**0.5
    invariance = shared_operator(AlignConv).energy(
        torch.cat([z1, z2]), cached_pair_graph(len(z1), 2, device=h1.device)
    )
    gram1, gram2 = z1.T @ z1, z2.T @ z2
    if shard is not None:  # the ranks' sums, in one all-reduce
        summed = all_reduce_sum(torch.cat([invariance[None], gram1.flatten(), gram2.flatten()]))
        invariance, gram1, gram2 = summed[0], *summed[1:].view(2, d, d)
    constant = d * (n - 1) / n  # ‖Z̃_v‖² per view: n - 1 per standardised column, over n
    eye = torch.eye(d, dtype=h1.dtype, device=h1.device)
    decor = (eye - gram1).square().sum() + (eye - gram2).square().sum()
    return 0.5 * invariance - constant + decorrelation * decor


class CCASSGLoss(FunctionalLoss):
    r"""CCA-SSG's loss (Zhang et al., *From Canonical Correlation Analysis to Self-supervised
    Graph Neural Networks*, NeurIPS 2021), as the authors' code computes it: with
    :math:`Z_v` the column-standardised embeddings of view :math:`v` over :math:`N` rows,
    :math:`C = Z_1^\top Z_2 / N` and :math:`C_v = Z_v^\top Z_v / N`
    (:func:`cca_ssg_loss`),

    .. math::
        \mathcal{L} = -\operatorname{tr}(C)
        + \lambda \big(\|I - C_1\|_F^2 + \|I - C_2\|_F^2\big).

    In the message-passing reading the invariance is :class:`~cl2gnn.nn.AlignConv`'s energy
    on the pair graph and the decorrelation, on the :math:`d \times d` feature Gram, stands
    in for uniformity (its non-zero spectrum is that of the :math:`N \times N` affinity
    Gram of :class:`SpectralContrastiveLoss`).

    Args:
        decorrelation (float, optional): :math:`\lambda` (default: ``1e-3``, the authors'
            Cora value).
        distributed (str, optional): ``"gather"`` or ``"ring"`` (alike here): under a
            process group, the loss of the union of every rank's rows (the statistics and
            Grams all-reduced, nothing of size :math:`N` exchanged) (default: ``None``).

    Shapes:
        - **input:** ``h1, h2`` :math:`(N, d)`, :math:`N \ge 2`
        - **output:** scalar

    Examples:
        >>> loss = CCASSGLoss(decorrelation=1e-3)(encoder(view1), encoder(view2))
    """

    functional = staticmethod(cca_ssg_loss)

    def forward(self, h1: Tensor, h2: Tensor) -> Tensor:
        return self.call_functional(h1, h2)
