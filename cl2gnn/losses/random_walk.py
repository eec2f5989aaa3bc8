from __future__ import annotations

from typing import Annotated

import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import coalesce, remove_self_loops
from typing_extensions import Unpack

from .._checks import one_of
from .._options import Distributed, Temperature, checks_options
from .._registry import PAIR_LOSSES
from ..nn._graph import edge_dot
from ._inputs import Graph, GraphLoss, shard_of_views, share_of_mean
from ._operators import uniform_attention

FORMS = ("paper", "squared")


@checks_options()
def random_walk_loss(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    temperature: Temperature = 0.5,
    form: Annotated[str, one_of(*FORMS)] = "paper",
    distributed: Distributed = None,
    **graph: Unpack[Graph],
) -> Tensor:
    """Functional form of :class:`RandomWalkLoss`."""
    (x, edge_index, _), shard = shard_of_views(z1, z2, graph, distributed, "RandomWalkLoss")
    x = F.normalize(x, dim=-1)
    n = x.size(0)
    edge_index, _ = remove_self_loops(coalesce(edge_index, num_nodes=n))  # 1[i∼j], j != i
    # P_ij = exp(S_ij - lse_i): UniformAttention's attention (tiled for large N, over every
    # rank's keys when distributed)
    lse = uniform_attention(temperature, distributed).row_logsumexp(x)
    walk = (edge_dot(x, x, edge_index) / temperature - lse[edge_index[1]]).exp()
    degree = float(edge_index.size(1))
    if form == "paper":  # Σ_{j≁i} P_ij = 1 - Σ_{j∼i} P_ij, as a row of P sums to one
        total = degree + n - 2 * walk.sum()
    else:  # Σ_{j≠i} P_ij² = exp(LSE_j(2 S_ij) - 2 lse_i): the log-partition at τ/2
        lse_half = uniform_attention(temperature / 2, distributed).row_logsumexp(x)
        total = degree - 2 * walk.sum() + (lse_half - 2 * lse).exp().sum()
    return share_of_mean(total, n, shard)


@PAIR_LOSSES.register
class RandomWalkLoss(GraphLoss):
    r"""The random-walk Laplacian loss: each anchor's one-step random walk on the affinity
    graph should land on its augmentation-graph neighbors (*Contrastive Learning is
    Spectral Clustering on Similarity Graph*, Tan et al., ICLR 2024).

    With :math:`W_{ij} = \exp(f_i^\top f_j / \tau)`, :math:`W_{ii} = 0`,
    :math:`P = D^{-1} W` and :math:`i \sim j` the augmentation graph:

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_{i \ne j} \mathbb{1}[i \sim j](1 - P_{ij})
        + \mathbb{1}[i \not\sim j] P_{ij}

    (``form="paper"``), or with both terms squared (``form="squared"``, the reference
    code's form). Features are L2-normalised; edge weights are ignored (adjacency only).
    Both forms reduce to ``O(E)`` terms and ``UniformAttention``'s per-anchor
    log-partition (tiled for large batches): with :math:`\sum_{j \ne i} P_{ij} = 1` the
    paper form is :math:`\frac{1}{N}\sum_i (d_i + 1 - 2\sum_{j \sim i} P_{ij})`, and
    :math:`\sum_{j \ne i} P_{ij}^2` is the log-partition at temperature :math:`\tau/2`.

    Args:
        temperature (float, optional): :math:`\tau` (default: ``0.5``).
        form (str, optional): ``"paper"`` or ``"squared"`` (default: ``"paper"``).
        distributed (str, optional): ``"gather"`` or ``"ring"``: the affinity graph spans
            every rank's rows, as in :class:`InfoNCELoss` (each rank returns
            ``world_size ×`` its share) (default: ``None``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)`, or ``x`` :math:`(N, d)` with
          ``edge_index`` or ``sample_id``
        - **output:** scalar

    Examples:
        >>> loss = RandomWalkLoss(temperature=0.5)(z1, z2)
    """

    functional = staticmethod(random_walk_loss)
