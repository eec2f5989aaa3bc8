"""PolyGCL: contrastive learning between a low-pass and a high-pass view made by learnable
spectral polynomial filters."""

from __future__ import annotations

import math
from typing import Annotated, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import Compose

from ..._checks import COUNT_MAX, Check, boolean, integer, number, probability
from ...losses import LocalGlobalLoss
from ...nn import ChebInterpConv
from ..config import NodeConfig
from ..encoders.features import ColumnMasked, SparseFeatures, permute_rows
from ..encoders.graph_encoder import GraphEncoder
from ..views import View
from .base import NodeMethod, ViewBatch, register_method


class PolyGCLFilters(torch.nn.Module):
    r"""PolyGCL's own modules around the encoder: the low-pass and the high-pass filter
    (:class:`~cl2gnn.nn.ChebInterpConv`), the optional batch norm of the filtered features,
    and the readout weights :math:`\alpha` (high) and :math:`\beta` (low), free scalars
    starting at 0.5.

    Args:
        in_channels (int): the input features' width (the batch norm's).
        K (int): the filters' degree.
        input_dropout (float): dropout of the input before the filters (their ``dprate``).
        dropout (float): dropout of the filtered features (their ``dropout``).
        batch_norm (bool): ``BatchNorm1d`` of the filtered features (their ``is_bns``).
    """

    def __init__(
        self,
        in_channels: int,
        K: int = 10,
        input_dropout: float = 0.0,
        dropout: float = 0.0,
        batch_norm: bool = False,
    ) -> None:
        super().__init__()
        self.spec = dict(
            in_channels=in_channels,
            K=K,
            input_dropout=input_dropout,
            dropout=dropout,
            batch_norm=batch_norm,
        )
        self.low, self.high = ChebInterpConv(K, "low"), ChebInterpConv(K, "high")
        self.alpha = torch.nn.Parameter(torch.tensor(0.5))
        self.beta = torch.nn.Parameter(torch.tensor(0.5))
        self.norm = (
            torch.nn.BatchNorm1d(in_channels, momentum=0.01) if batch_norm else torch.nn.Identity()
        )

    def filtered(self, conv: ChebInterpConv, x: Tensor, laplacian: tuple[Tensor, Tensor]) -> Tensor:
        """``norm(drop(filter(drop(x))))``: one branch's input to the encoder."""
        x = F.dropout(x, self.spec["input_dropout"], self.training)
        z = F.dropout(conv.filter_on(x, laplacian), self.spec["dropout"], self.training)
        return self.norm(z)


class PolyGCLEncoder(torch.nn.Module):
    r"""PolyGCL's embedding as one module: the encoder :math:`f` applied node by node to the
    low-pass and the high-pass filtered features, combined,

    .. math::
        Z = \alpha\, f(g_H(\tilde L) X) + \beta\, f(g_L(\tilde L) X).

    The encoder reads the filtered features on a graph without edges (the filters are the
    propagation): the built-in one-layer encoder is then the authors' ``Linear`` and
    activation (its self-loop the only edge); an encoder of one's own is applied to each
    node alone. What :class:`~cl2gnn.node.TrainResult` hands back and saves as
    ``result.encoder`` for PolyGCL.

    Args:
        encoder (torch.nn.Module): the encoder, ``encoder(x, edge_index)``.
        filters (PolyGCLFilters): the filters and the readout weights.

    Shapes:
        - **input:** node features :math:`(N, F)`, edge indices :math:`(2, E)`, edge
          weights :math:`(E)` *(optional)*
        - **output:** :math:`(N, d)`
    """

    def __init__(self, encoder: torch.nn.Module, filters: PolyGCLFilters) -> None:
        super().__init__()
        self.encoder, self.filters = encoder, filters

    @property
    def spec(self) -> dict:
        """The filters' arguments (plain values): what rebuilds them."""
        return dict(self.filters.spec)

    def inputs(self, x: Tensor) -> Tensor:
        """The features as the filters read them: row-normalised where the built-in
        encoder normalises."""
        return self.encoder.normalize(x) if isinstance(self.encoder, GraphEncoder) else x

    def node_map(self, z: Tensor) -> Tensor:
        """The encoder on ``z`` node by node (a graph of self-loops only)."""
        no_edges = torch.empty(2, 0, dtype=torch.long, device=z.device)
        if isinstance(self.encoder, GraphEncoder):
            # (no) weights in z's dtype: the self-loops' weights follow them
            weight = None if self.encoder.kind == "gat" else z.new_zeros(0)
            graph = self.encoder.propagation_graph(no_edges, z.size(0), edge_weight=weight)
            return self.encoder.embed(z, graph)
        return self.encoder(z, no_edges)

    def branches(self, x: Tensor, laplacian: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """``(Z_L, Z_H)``: the encoder on the low-pass and the high-pass features of the
        dense input ``x`` (each branch its own dropout draws)."""
        filters = self.filters
        low = self.node_map(filters.filtered(filters.low, x, laplacian))
        high = self.node_map(filters.filtered(filters.high, x, laplacian))
        return low, high

    def combine(self, low: Tensor, high: Tensor) -> Tensor:
        return self.filters.alpha * high + self.filters.beta * low

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        x = self.inputs(x)
        laplacian = self.filters.low.laplacian(x, edge_index, edge_weight)
        return self.combine(*self.branches(x, laplacian))


FILTER_DEGREE = integer(1, 64)  # the filters' degree K


def check_polygcl_encoder(kind: str | None, self_loops: bool, filter_batch_norm: bool) -> None:
    """What PolyGCL needs of its encoder (``kind``: the built-in encoder's, ``None`` for
    one's own): the built-in GCN with its self-loops (it reads each node alone, on a graph
    of self-loops), and the built-in encoder for the filters' batch norm (the input width
    sizes it)."""
    if kind == "gcn" and not self_loops:
        raise ValueError(
            "self_loops: PolyGCL's encoder reads each node alone (a graph of self-loops): "
            "the built-in GCN needs self_loops=True"
        )
    if filter_batch_norm and kind is None:
        raise ValueError("filter_batch_norm: needs the built-in encoder (the input width sizes it)")


@register_method("polygcl")
class PolyGCL(NodeMethod):
    r"""PolyGCL (Chen et al., *PolyGCL: Graph Contrastive Learning via Learnable Spectral
    Polynomial Filters*, ICLR 2024): a low-pass and a high-pass view of the graph made by
    learnable Chebyshev-interpolation filters (:class:`~cl2gnn.nn.ChebInterpConv`,
    :math:`K` = ``filter_degree``), one shared encoder :math:`f` (the authors' one
    ``Linear(F, 512)`` and ReLU: the built-in encoder with one layer) on each, the
    embedding :math:`Z = \alpha Z_H + \beta Z_L`, its summary
    :math:`c = \operatorname{ReLU}(\operatorname{mean}_i Z_i)`, and a bilinear
    discriminator scoring both views' nodes above those of row-shuffled features (one
    permutation for both filters; :class:`~cl2gnn.losses.LocalGlobalLoss` over the 4N
    scores),

    .. math::
        \mathcal{L} = \ell\big([Z_L; Z_H], [\tilde Z_L; \tilde Z_H], c\big).

    As the authors' code: dropout is the only randomness of the views, the built-in GCN
    encoder starts as ``nn.Linear``'s default and the discriminator as ``nn.Bilinear``'s
    (:math:`U(\pm 1/\sqrt{\text{fan-in}})`, biases too, not Glorot's), and the
    filters, :math:`\alpha` and :math:`\beta` train at ``filter_lr``. Unlike it: every
    parameter trains (theirs leaves the PReLU slope and the batch norm's affine weights at
    their initial values), the filters see the symmetric part of a directed graph, and
    training runs the configuration's epochs (theirs stops on the training loss, patience
    20, and keeps the lowest-loss epoch). The summary is the whole graph's: no mini-batches.

    Args:
        encoder (torch.nn.Module): the encoder, applied to each node alone.
        filter_degree (int, optional): the filters' degree :math:`K` (default: ``10``).
        filter_lr (float, optional): the learning rate of the filters, :math:`\alpha` and
            :math:`\beta` (:meth:`learning_rates`; the encoder and the discriminator train
            at the optimiser's) (default: ``0.01``).
        input_dropout (float, optional): dropout before the filters (default: ``0.5``).
        filter_dropout (float, optional): dropout after them (default: ``0.5``).
        filter_batch_norm (bool, optional): a batch norm of the filtered features (the
            built-in encoder only) (default: ``False``).
        dim: as :class:`~cl2gnn.node.NodeMethod`'s (no views: the filters are the views).
    """

    minibatch = False
    min_batch_size = 2  # one node shuffled is itself: no negative
    embedding_spec_checks: ClassVar[dict[str, Check]] = {  # PolyGCLFilters' arguments
        "in_channels": integer(0, COUNT_MAX),  # 0: no batch norm (an encoder of one's own)
        "K": FILTER_DEGREE,
        "input_dropout": probability,
        "dropout": probability,
        "batch_norm": boolean,
    }

    @classmethod
    def check_compatible(cls, options, config, data, encoder) -> None:
        kind = config.encoder if encoder is None else None
        check_polygcl_encoder(kind, config.self_loops, options.filter_batch_norm)

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        filter_degree: Annotated[int, FILTER_DEGREE] = 10,
        filter_lr: Annotated[float, number(0.0, 1.0, above=True)] = 0.01,  # as learning_rate
        input_dropout: Annotated[float, probability] = 0.5,
        filter_dropout: Annotated[float, probability] = 0.5,
        filter_batch_norm: Annotated[bool, boolean] = False,
        views: View | tuple[View, View] | None = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(
            filter_degree=filter_degree,
            filter_lr=filter_lr,
            input_dropout=input_dropout,
            filter_dropout=filter_dropout,
            filter_batch_norm=filter_batch_norm,
        )
        builtin = isinstance(encoder, GraphEncoder)
        check_polygcl_encoder(
            encoder.kind if builtin else None, not builtin or encoder.self_loops, filter_batch_norm
        )
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        if builtin and encoder.kind == "gcn":
            for conv in encoder.convs:  # their nn.Linear's default init, not GCN's Glorot
                torch.nn.init.kaiming_uniform_(conv.lin.weight, a=math.sqrt(5))
                bound = 1.0 / math.sqrt(conv.lin.weight.size(1))
                torch.nn.init.uniform_(conv.bias, -bound, bound)
        in_channels = encoder.widths[0] if builtin else 0
        self.filters = PolyGCLFilters(
            in_channels, filter_degree, input_dropout, filter_dropout, filter_batch_norm
        )
        self.loss = LocalGlobalLoss(self.dim)
        bound = 1.0 / math.sqrt(self.dim)  # nn.Bilinear(d, d, 1)'s default, as their code
        torch.nn.init.uniform_(self.loss.weight, -bound, bound)
        torch.nn.init.uniform_(self.loss.bias, -bound, bound)

    def default_views(
        self, config: NodeConfig, generator: torch.Generator | None = None
    ) -> tuple[View, View]:
        return Compose([]), Compose([])  # the views are the two filters of the graph

    def learning_rates(self) -> dict[torch.nn.Parameter, float]:
        """The filters' θ, α and β at ``filter_lr`` (the batch norm's at the encoder's)."""
        filters = self.filters.named_parameters()
        return dict.fromkeys(
            (p for name, p in filters if not name.startswith("norm.")), self.options.filter_lr
        )

    def forward(self, data: Data | ViewBatch) -> Tensor:
        batch = self.view_batch(data)
        model = self.embedding_model()
        x = batch.views[0].x  # as the encoder reads it: normalised, maybe kept sparse
        if isinstance(x, SparseFeatures | ColumnMasked):
            x = x.to_dense()
        laplacian = self.filters.low.laplacian(x, batch.edge_index, batch.edge_weight)
        low, high = model.branches(x, laplacian)
        order = torch.randperm(x.size(0), device=x.device)
        low_c, high_c = model.branches(permute_rows(x, order), laplacian)
        summary = torch.relu(model.combine(low, high).mean(0))
        return self.loss(torch.cat([low, high]), torch.cat([low_c, high_c]), summary)

    def embedding_model(self) -> PolyGCLEncoder:
        """The encoder on both filters' outputs, combined (the authors' embedding), as one
        module."""
        return PolyGCLEncoder(self.encoder, self.filters)

    def embedding_spec(self) -> dict:
        """The filters' arguments (plain values)."""
        return dict(self.filters.spec)

    @classmethod
    def embedding_model_of(cls, encoder: torch.nn.Module, spec: dict | None) -> PolyGCLEncoder:
        return PolyGCLEncoder(encoder, PolyGCLFilters(**spec))
