"""MVGRL: contrastive multi-view representation learning on graphs."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Annotated, ClassVar

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.nn.inits import reset
from torch_geometric.transforms import Compose

from ..._checks import COUNT_MAX, Check, integer, number, optional
from ...losses import LocalGlobalLoss
from ..config import NodeConfig
from ..encoders.features import SparseFeatures, dense_features, permute_rows, prepare_features
from ..encoders.graph_encoder import GraphEncoder
from ..encoders.propagation import propagate
from ..views import Diffusion, View
from .base import EncoderInput, NodeMethod, ViewBatch, register_method

ALPHA = 0.2  # the authors' teleport probability
# the most memory an encoder of one's own may need for the messages of the exact diffusion's
# N² edges (one message of the input features per edge): past it, set diffusion_k
MAX_DENSE_MESSAGE_BYTES = 2**30


class MVGRLEncoder(torch.nn.Module):
    r"""MVGRL's embedding as one module: the graph encoder on the graph plus the diffusion
    encoder on its personalised-PageRank diffusion (:class:`~cl2gnn.node.Diffusion`),

    .. math::
        h = f_{\alpha}(X, A) + f_{\delta}(X, S).

    What :class:`~cl2gnn.node.TrainResult` hands back and saves as ``result.encoder`` for
    MVGRL, called as PyG's models are, on any graph with the same feature width.

    Args:
        encoder (torch.nn.Module): the graph encoder, ``encoder(x, edge_index)``.
        diffusion_encoder (torch.nn.Module): the diffusion encoder, called with
            ``edge_weight=`` (the diffusion's weights).
        diffusion (Diffusion): the diffusion its second view is.

    Shapes:
        - **input:** node features :math:`(N, F)`, edge indices :math:`(2, E)`, edge
          weights :math:`(E)` *(optional)*
        - **output:** :math:`(N, d)`
    """

    def __init__(
        self, encoder: torch.nn.Module, diffusion_encoder: torch.nn.Module, diffusion: Diffusion
    ) -> None:
        super().__init__()
        self.encoder, self.diffusion_encoder = encoder, diffusion_encoder
        self.diffusion = diffusion

    @property
    def spec(self) -> dict:
        """The diffusion's arguments (plain values): what rebuilds it."""
        return {"alpha": self.diffusion.alpha, "k": self.diffusion.k, "eps": self.diffusion.eps}

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        if exact_builtin(self.diffusion, self.diffusion_encoder):  # S as it is, not renormalised
            encoder = self.diffusion_encoder
            matrix = self.diffusion.matrix(edge_index, x.size(0), edge_weight).to(x.dtype)
            on_diffusion = encoder.embed(encoder.prepare(x), matrix)
        else:
            edges, weights = self.diffusion.diffusion(edge_index, x.size(0), edge_weight)
            on_diffusion = self.diffusion_encoder(x, edges, edge_weight=weights.to(x.dtype))
        if edge_weight is None:
            return self.encoder(x, edge_index) + on_diffusion
        return self.encoder(x, edge_index, edge_weight=edge_weight) + on_diffusion


def exact_builtin(diffusion: Diffusion, encoder: torch.nn.Module) -> bool:
    """Whether the diffusion encoder propagates on the exact diffusion matrix as it is: the
    built-in encoder (an encoder of one's own reads the diffusion's entries as weighted
    edges, and normalises them as it does any graph)."""
    return diffusion.exact and isinstance(encoder, GraphEncoder)


def check_diffusion_encoder(kind: str, diffusion_k: int | None) -> None:
    """The built-in encoder of kind ``kind`` on MVGRL's diffusion: the exact diffusion is a
    dense weighted matrix, which its GAT does not take."""
    if kind == "gat" and diffusion_k is None:
        raise ValueError(
            "encoder: MVGRL's exact diffusion is a weighted matrix, which the GAT encoder "
            "does not take: use encoder gcn or sage, or set diffusion_k"
        )


@register_method("mvgrl")
class MVGRL(NodeMethod):
    r"""MVGRL (Hassani & Khasahmadi, *Contrastive Multi-View Representation Learning on
    Graphs*, ICML 2020): two structural views, the graph and its personalised-PageRank
    diffusion (:class:`~cl2gnn.node.Diffusion`, :math:`\alpha = 0.2`; exact and dense, the
    built-in encoder propagating on :math:`S` as it is, or with ``diffusion_k`` that many
    in-edges kept per node, then normalised as a graph), each through its own encoder;
    every node of one view is scored against the other view's summary
    :math:`s = \sigma(\mathrm{mean}_i h_i)` by a bilinear discriminator, against the nodes
    of row-shuffled features
    (:class:`~cl2gnn.losses.LocalGlobalLoss`, both directions averaged),

    .. math::
        \mathcal{L} = \tfrac12 \big[\ell(h^{\alpha}, \tilde h^{\alpha}, s^{\delta})
        + \ell(h^{\delta}, \tilde h^{\delta}, s^{\alpha})\big].

    The composition, as the authors' code: the library's encoder reads the graph, a second
    encoder of the same architecture (a re-initialised copy, trained with it) the
    diffusion, one discriminator for both directions, and the embedding for the probe is
    the sum of the two encoders' outputs on the clean graph and its diffusion
    (:class:`MVGRLEncoder`, :meth:`embedding_model`). Their code stops once the loss has
    not improved for 20 epochs (its configuration's ``patience``) and trains on 4 windows
    of 2,000 consecutive nodes per step (``window_size``, ``windows``): the graph's
    propagation matrix and the diffusion restricted to the window's nodes, its summary the
    window's, the same shuffle of the window's rows for every window; the step's loss is the
    windows' mean.

    In the message-passing reading it is DGI's alignment of every node with a virtual
    summary node (the star graph to it), across views: the summary of one structure
    attracts the nodes of the other. The summary is the whole graph's: no mini-batches,
    no ``torchrun``.

    Args:
        encoder (torch.nn.Module): the graph encoder (the diffusion encoder is a
            re-initialised copy of it, trained with it).
        diffusion_k (int, optional): the in-edges per node kept of the diffusion (``None``:
            the exact, dense diffusion, as the authors' code; a number for a graph too
            large for it) (default: ``None``).
        window_size (int, optional): each step trains on ``windows`` windows of that many
            consecutive nodes, as the authors' code (4 of 2,000), where the graph has more
            nodes than a window and the built-in encoder reads the exact diffusion (the
            windows are slices of the dense matrices); ``None``: the whole graph (default:
            ``2000``).
        windows (int, optional): the windows per step (default: ``4``).
        views, dim: as :class:`~cl2gnn.node.NodeMethod`'s (default: the graph and its
            diffusion).
    """

    minibatch = False
    weighted_views = "a weighted graph (its diffusion view)"
    embedding_spec_checks: ClassVar[dict[str, Check]] = {  # Diffusion's arguments
        "alpha": number(0.0, 1.0, above=True),
        "k": optional(integer(1, COUNT_MAX)),
        "eps": optional(number(0.0, above=True)),
    }

    @classmethod
    def check_compatible(cls, options, config, data, encoder) -> None:
        """The exact diffusion: for the built-in encoder a dense matrix, which its GAT does
        not take; for an encoder of one's own ``N²`` weighted edges, refused where their
        messages of the input features would pass :data:`MAX_DENSE_MESSAGE_BYTES`."""
        if encoder is None:
            check_diffusion_encoder(config.encoder, options.diffusion_k)
        if options.diffusion_k is not None:
            return
        n = data.num_nodes
        cost = n * n * data.num_features * data.x.element_size()
        if encoder is not None and cost > MAX_DENSE_MESSAGE_BYTES:
            raise ValueError(
                f"diffusion_k: MVGRL's exact diffusion of {n} nodes is {n * n:,} weighted edges "
                f"for an encoder of your own, about {cost / 2**30:.1f} GiB of messages of "
                f"{data.num_features} features: set diffusion_k (e.g. 128) to keep the largest "
                "in-weights of each node"
            )

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        diffusion_k: Annotated[int | None, optional(integer(1))] = None,
        window_size: Annotated[int | None, optional(integer(2))] = 2_000,
        windows: Annotated[int, integer(1)] = 4,
        views: View | tuple[View, View] | None = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(diffusion_k=diffusion_k, window_size=window_size, windows=windows)
        if isinstance(encoder, GraphEncoder):
            check_diffusion_encoder(encoder.kind, diffusion_k)
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        self.diffusion = Diffusion(ALPHA, k=diffusion_k)
        self.diffusion_encoder = copy.deepcopy(encoder)
        reset(self.diffusion_encoder)
        # the built-in encoder on the exact diffusion propagates on the matrix S itself
        self.matrix_view = exact_builtin(self.diffusion, encoder)
        self.loss = LocalGlobalLoss(self.dim)
        self._dense: tuple = (None, None, None, None)  # (graph, adjacency, S float64, S)

    def default_views(
        self, config: NodeConfig, generator: torch.Generator | None = None
    ) -> tuple[View, View]:
        # the graph as it is, and its diffusion (with matrix_view, the graph again:
        # diffusion_input puts the matrix in its place)
        return Compose([]), Compose([]) if self.matrix_view else self.diffusion

    def windowed(self, num_nodes: int) -> bool:
        """Whether a step on a graph of ``num_nodes`` trains on windows: the built-in encoder
        on the exact diffusion, on a graph of more nodes than a window."""
        size = self.options.window_size
        return self.matrix_view and size is not None and size < num_nodes

    def diffusion_input(self, batch: ViewBatch) -> EncoderInput:
        """The diffusion view as the diffusion encoder reads it: the second view, or for the
        built-in encoder on the exact diffusion the first view's features with the dense
        matrix :math:`S` of the batch's graph, weighted by its ``edge_weight``
        (:meth:`Diffusion.matrix`)."""
        graph, diffusion = batch.views
        if not self.matrix_view:
            return diffusion
        matrix = self.diffusion.matrix(batch.edge_index, batch.num_seeds, batch.edge_weight)
        return replace(graph, graph=matrix.to(torch.get_default_dtype()))

    def forward(self, data: Data | ViewBatch) -> Tensor:
        batch = self.view_batch(data)
        if self.windowed(batch.num_seeds):
            return self.window_loss(batch)
        graph, diffusion = batch.views[0], self.diffusion_input(batch)
        encoder, diffusion_encoder = self.encoder, self.diffusion_encoder
        order = torch.randperm(batch.num_seeds, device=batch.edge_index.device)
        h_graph, h_diffusion = graph(encoder), diffusion(diffusion_encoder)
        # DGI's corruption, one permutation of the feature rows for both views
        c_graph = replace(graph, x=permute_rows(graph.x, order))(encoder)
        c_diffusion = replace(diffusion, x=permute_rows(diffusion.x, order))(diffusion_encoder)
        s_graph, s_diffusion = torch.sigmoid(h_graph.mean(0)), torch.sigmoid(h_diffusion.mean(0))
        return 0.5 * (
            self.loss(h_diffusion, c_diffusion, s_graph) + self.loss(h_graph, c_graph, s_diffusion)
        )

    def dense_matrices(self, batch: ViewBatch, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """The first view's propagation graph and the exact diffusion, dense ``[N, N]`` in
        ``dtype``, made once per graph."""
        graph = batch.views[0].graph
        matrix = self.diffusion.matrix(batch.edge_index, batch.num_seeds, batch.edge_weight)
        cached_graph, adjacency, cached_matrix, diffusion = self._dense
        if cached_graph is not graph or cached_matrix is not matrix:
            eye = torch.eye(batch.num_seeds, dtype=dtype, device=matrix.device)
            adjacency, diffusion = propagate(graph, eye), matrix.to(dtype)
            self._dense = (graph, adjacency, matrix, diffusion)
        return adjacency, diffusion

    def window_loss(self, batch: ViewBatch) -> Tensor:
        """The authors' step: the loss on ``windows`` random windows of ``window_size``
        consecutive nodes (the graph's and the diffusion's matrices restricted to them, one
        shuffle of the rows for every window), averaged."""
        features = batch.views[0].x
        sparse = isinstance(features, SparseFeatures)  # a window's rows stay sparse
        x = dense_features(features)
        adjacency, diffusion = self.dense_matrices(batch, x.dtype)
        size = self.options.window_size
        starts = torch.randint(0, batch.num_seeds - size + 1, (self.options.windows,))
        order = torch.randperm(size, device=x.device)
        losses = []
        for start in starts.tolist():
            nodes = slice(start, start + size)
            rows = prepare_features(x[nodes], sparse)
            shuffled = permute_rows(rows, order)
            a, s = adjacency[nodes, nodes], diffusion[nodes, nodes]
            encoder = self.encoder
            h_graph, h_diffusion = encoder.encode(rows, a), self.diffusion_encoder.encode(rows, s)
            c_graph = encoder.encode(shuffled, a)
            c_diffusion = self.diffusion_encoder.encode(shuffled, s)
            s_graph = torch.sigmoid(h_graph.mean(0))
            s_diffusion = torch.sigmoid(h_diffusion.mean(0))
            losses.append(
                self.loss(h_diffusion, c_diffusion, s_graph)
                + self.loss(h_graph, c_graph, s_diffusion)
            )
        return 0.5 * torch.stack(losses).mean()

    def embedding_model(self) -> MVGRLEncoder:
        """The sum of the graph encoder's output on the graph and the diffusion encoder's on
        its diffusion (the authors' embedding), as one module."""
        return MVGRLEncoder(self.encoder, self.diffusion_encoder, self.diffusion)

    def embedding_spec(self) -> dict:
        """The diffusion's arguments (plain values)."""
        return self.embedding_model().spec

    @classmethod
    def embedding_model_of(cls, encoder: torch.nn.Module, spec: dict | None) -> MVGRLEncoder:
        """Both encoders (the diffusion encoder a copy of ``encoder``'s architecture, its
        weights to be loaded) around the diffusion ``spec`` describes."""
        return MVGRLEncoder(encoder, copy.deepcopy(encoder), Diffusion(**spec))
