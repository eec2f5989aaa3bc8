"""GRACE's scheme and the contrastive objectives of the seed papers on it: both views through
the encoder and a projection head, a contrastive loss between the projections.

In the message-passing reading every one of them is alignment on an augmentation graph
(the two views of a node, and for some methods graph or feature-space neighbors) minus
uniformity on the affinity graph of the projections: :class:`~cl2gnn.nn.AlignConv` and
:class:`~cl2gnn.nn.UniformAttention` through the losses of :mod:`cl2gnn.losses`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import torch
from torch import Tensor
from torch_geometric.data import Data

from ..._checks import integer, one_of, optional
from ...losses import info_nce
from ...nn.tiled import MATMUL_DTYPES
from ..views import View
from .base import NodeMethod, ViewBatch, register_method
from .heads import ProjectionHead
from .options import OTHERS_REFUSE, MethodOptions, Temperature, Width

# the exact InfoNCE's uniformity term over this many views drawn per step instead of all 2N
# (None: exact; full-batch only, a mini-batch's negatives are its seeds), and its tiles'
# products in bfloat16 on the CPU (float32 accumulation; None: float32, exact)
Keys = Annotated[int | None, optional(integer(1)), OTHERS_REFUSE]
MatmulDtype = Annotated[str | None, optional(one_of(*MATMUL_DTYPES)), OTHERS_REFUSE]
Views = View | tuple[View, View] | None


def cross_view_edges(source: Tensor, target: Tensor, num_nodes: int) -> Tensor:
    """Edges ``source -> target`` of a node graph as positives across the two stacked
    views: ``source`` in view 2 for ``target`` in view 1, and the reverse."""
    return torch.cat(
        [torch.stack([source + num_nodes, target]), torch.stack([source, target + num_nodes])],
        dim=1,
    )


class ContrastiveMethod(NodeMethod):
    """GRACE's scheme (Zhu et al., 2020): encoder outputs ``h1, h2`` of the two views,
    projections ``z = head(h)`` (:class:`~cl2gnn.node.methods.heads.ProjectionHead`, its
    hidden width the options' ``proj_hidden``), and a contrastive loss of them over the seed
    rows."""

    min_batch_size = 2  # one seed has no negative: its loss is zero, or NaN (spectral)
    reads_seed_rows_only = True

    def __init__(self, encoder: torch.nn.Module, options: MethodOptions, **context) -> None:
        super().__init__(encoder, options, **context)
        self.head = ProjectionHead(self.dim, options.proj_hidden)

    def project(self, data: Data | ViewBatch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(z1, z2, h1, h2)``: the projections and the encoder outputs of the two views of
        ``data`` (:meth:`~NodeMethod.view_batch`), the seed rows."""
        h1, h2 = self.encode(self.view_batch(data))
        return self.head(h1), self.head(h2), h1, h2


class InfoNCEMethod(ContrastiveMethod):
    """:class:`ContrastiveMethod` whose loss is :func:`~cl2gnn.losses.info_nce`: its options
    ``temperature``, ``num_keys`` and ``matmul_dtype`` are the loss's, checked with
    ``distributed`` once, where the method is built; a step calls the loss's unchecked form
    with :meth:`loss_options`."""

    def __init__(self, encoder: torch.nn.Module, options: MethodOptions, **context) -> None:
        super().__init__(encoder, options, **context)
        info_nce.check_options(**self.loss_options())

    def loss_options(self) -> dict:
        """The options :func:`~cl2gnn.losses.info_nce` takes from this method."""
        options = self.options
        return {
            "temperature": options.temperature,
            "num_keys": options.num_keys,
            "matmul_dtype": options.matmul_dtype,
            "distributed": self.distributed,
        }


@register_method("grace")
class GRACE(InfoNCEMethod):
    r"""GRACE (Zhu et al., *Deep Graph Contrastive Representation Learning*, 2020): InfoNCE
    over the :math:`2N` stacked projections of two views, inter- and intra-view negatives
    (:func:`~cl2gnn.losses.info_nce` = ``AlignConv`` on the pair graph +
    ``UniformAttention`` on the affinity graph).

    Args:
        encoder (torch.nn.Module): the encoder, ``encoder(x, edge_index)``.
        proj_hidden (int, optional): the projection head's hidden width (default: ``128``).
        temperature (float, optional): :math:`\tau` (default: ``0.4``).
        num_keys (int, optional): the uniformity term over this many views drawn per step
            (``None``: all :math:`2N`, exact) (default: ``None``).
        matmul_dtype (str, optional): ``"bfloat16"``: the exact loss's products in bfloat16
            on the CPU (default: ``None``).
        views, dim, distributed: as :class:`~cl2gnn.node.NodeMethod`'s.

    Examples:
        >>> method = GRACE(GCN(1433, 256, num_layers=2, out_channels=128), temperature=0.4)
        >>> loss = method(data)  # two views of data: edges dropped, feature columns masked
    """

    spans_ranks = True

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        proj_hidden: Width = 128,
        temperature: Temperature = 0.4,
        num_keys: Keys = None,
        matmul_dtype: MatmulDtype = None,
        views: Views = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(
            proj_hidden=proj_hidden,
            temperature=temperature,
            num_keys=num_keys,
            matmul_dtype=matmul_dtype,
        )
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)

    def forward(self, data: Data | ViewBatch) -> Tensor:
        z1, z2, _, _ = self.project(data)
        return info_nce.unchecked(z1, z2, **self.loss_options())


class CallableObjective(ContrastiveMethod):
    """GRACE's scheme with any objective ``(z1, z2, h1, h2) -> loss`` (a baseline to compare
    against, a loss under study); the parameters of a ``torch.nn.Module`` objective train
    with the encoder. Args: ``encoder``, ``objective``, ``proj_hidden``, as
    :class:`GRACE`'s."""

    name = "callable"

    def __init__(
        self,
        encoder: torch.nn.Module,
        objective: Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
        *,
        proj_hidden: Width = 128,
        views: Views = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(proj_hidden=proj_hidden)
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        self.fn = objective  # a Module is registered as a submodule: its parameters train
        self.label = getattr(objective, "__name__", type(objective).__name__)

    def forward(self, data: Data | ViewBatch) -> Tensor:
        return self.fn(*self.project(data))
