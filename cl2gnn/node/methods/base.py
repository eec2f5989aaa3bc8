"""What a node method is: a module that takes the encoder and a batch of two augmented views
and returns the loss, and states what it can do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..._registry import NODE_METHODS as REGISTRY
from ..config import NodeConfig
from ..encoders.features import ColumnMasked, SparseFeatures
from ..encoders.own import checked_output
from ..views import View, config_views
from .options import MethodOptions


@dataclass
class EncoderInput:
    """One view as the encoder reads it; calling it with an encoder (the online one, or a
    copy such as a target encoder) runs that encoder on it.

    Attributes:
        x: the view's features.
        graph: its ``edge_index``, or for the built-in encoder (``prepared``) the
            propagation graph (:meth:`~cl2gnn.node.GraphEncoder.propagation_graph`), or one
            per layer.
        edge_weight: the edges' weights, passed as ``edge_weight=`` (``None``: not passed).
        prepared: ``x`` and ``graph`` were prepared for the built-in encoder, whose
            :meth:`~cl2gnn.node.GraphEncoder.encode` reads them (``x`` may keep a column mask
            apart); else the encoder is called as PyG's models are,
            ``encoder(x, edge_index[, edge_weight=])``.
    """

    x: Tensor | SparseFeatures | ColumnMasked
    graph: Tensor | tuple[Tensor, ...]
    edge_weight: Tensor | None = None
    prepared: bool = False

    def __call__(self, encoder: torch.nn.Module) -> Tensor:
        if self.prepared:
            return encoder.encode(self.x, self.graph)
        if self.edge_weight is None:
            out = encoder(self.x, self.graph)
        else:
            out = encoder(self.x, self.graph, edge_weight=self.edge_weight)
        return checked_output(out, self.x)  # every row, every call: a shape check


@dataclass
class ViewBatch:
    """Two augmented views of a graph, or of a sampled subgraph, for one training step.

    Attributes:
        views: each view as the encoder reads it (:class:`EncoderInput`).
        edge_index: the un-augmented input graph ``[2, E]`` (the batch's local node ids).
        num_seeds: the loss is over rows ``0 … num_seeds - 1`` (every node in full-batch
            training; a mini-batch's seed nodes, which its sampler lists first).
        edge_weight: the input graph's edge weights, where it has them (full batch).
    """

    views: list[EncoderInput]
    edge_index: Tensor
    num_seeds: int
    edge_weight: Tensor | None = None


class NodeMethod(torch.nn.Module):
    """A node-level self-supervised method: :meth:`forward` encodes a :class:`ViewBatch` with
    the encoder and returns the loss; the method's own modules (a projection head, a
    predictor, a target encoder) and state (a memory bank) live in it, so the trainer
    optimises the encoder's and the method's parameters together and calls
    :meth:`after_step` after every optimiser step.

    A subclass registers itself under its name with ``@register_method("name")`` (its key
    in :data:`~cl2gnn.node.methods.REGISTRY`), declares its own options as ``Options`` (a
    :class:`~cl2gnn.node.methods.options.MethodOptions` dataclass, read from the
    configuration's ``options`` into :attr:`options`) and states what it can do:

    * ``minibatch``: it trains on sampled mini-batches of nodes (``config.batch_size``);
    * ``spans_ranks``: its negatives span the ranks of a process group (``torchrun``);
    * ``per_node_state``: it keeps a state for every node of the graph (a memory bank);
    * ``reads_graph``: its loss reads the input graph's edges (as positives), which do not
      carry an ``edge_weight``;
    * ``min_batch_size``: the fewest seed nodes it can train on in one process's share of a
      mini-batch (``1``; contrastive methods need a negative, the kNN method ``k + 1``
      seeds): the batching merges a last batch too small for it into the one before, and a
      ``batch_size`` too small for it is refused.

    Args:
        config (NodeConfig): the run's configuration (the method reads its own fields).
        dim (int): the width of the encoder's output (heads and predictors take it).
        num_nodes (int): the nodes of the graph (per-node state is sized by it).
        graph (Tensor, optional): the input graph ``[2, E]``, for methods that read it
            beyond the batch.
        distributed (str, optional): ``"gather"`` or ``"ring"`` under a process group
            (methods with ``spans_ranks``).
        encoder (torch.nn.Module, optional): the online encoder, for methods that keep a
            copy of it (a target encoder).
    """

    name: ClassVar[str]
    minibatch: ClassVar[bool] = True
    spans_ranks: ClassVar[bool] = False
    per_node_state: ClassVar[bool] = False
    reads_graph: ClassVar[bool] = False
    Options: ClassVar[type[MethodOptions]] = MethodOptions
    min_batch_size: ClassVar[int] = 1

    def __init__(
        self,
        config: NodeConfig,
        *,
        dim: int,
        num_nodes: int,
        graph: Tensor | None = None,
        distributed: str | None = None,
        encoder: torch.nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.options = self.Options.of(config.options, self.name)
        self.dim, self.num_nodes = dim, num_nodes
        self.distributed = distributed

    @staticmethod
    def encode(encoder: torch.nn.Module, batch: ViewBatch) -> list[Tensor]:
        """The encoder's output on each view, the seed rows only."""
        return [view(encoder)[: batch.num_seeds] for view in batch.views]

    def forward(self, encoder: torch.nn.Module, batch: ViewBatch) -> Tensor:
        raise NotImplementedError

    def default_views(
        self, config: NodeConfig, generator: torch.Generator | None = None
    ) -> tuple[View, View]:
        """The two views it trains on where none are given: the configuration's edge
        dropping and feature masking (``generator``: :class:`~cl2gnn.node.MaskFeatures`')."""
        return config_views(config.drop_edge, config.drop_feature, generator)

    def embedding_model(self, encoder: torch.nn.Module) -> torch.nn.Module:
        """The module whose output is every node's embedding, called as PyG's models are,
        ``model(x, edge_index[, edge_weight=])``: the encoder itself, or for a method that
        embeds with more (MVGRL's second encoder) one module holding it all. What training
        hands back and saves as ``result.encoder``."""
        return encoder

    def embed(
        self, encoder: torch.nn.Module, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None
    ) -> Tensor:
        """Every node's embedding on the clean graph, for the probe: :meth:`embedding_model`'s
        output, in the mode the encoder is in, one row per node."""
        model = self.embedding_model(encoder)
        if model is not encoder:  # its other encoders in the encoder's mode
            model.train(encoder.training)
        if edge_weight is None:
            out = model(x, edge_index)
        else:
            out = model(x, edge_index, edge_weight=edge_weight)
        return checked_output(out, x)

    def learning_rates(self) -> dict[torch.nn.Parameter, float]:
        """The method's parameters that train at a learning rate of their own (PolyGCL's
        filters), by parameter; the others train at the configuration's. A schedule
        (warm-up, cosine) scales each alike."""
        return {}

    def after_step(self, encoder: torch.nn.Module, progress: float) -> None:
        """Called after each optimiser step with the fraction of training done (``0 … 1``):
        where a target network follows the encoder."""

    def extra_repr(self) -> str:
        return f"name={self.name!r}"


def register_method(name: str):
    """Class decorator: the method, named ``name``, in :data:`REGISTRY`."""
    return REGISTRY.register(name)
