"""What a node method is: a ``torch.nn.Module`` holding the encoder and what the method adds
to it (heads, predictors, a target encoder, a memory), whose call on a graph returns the
loss, as PyG's ``DeepGraphInfomax`` does; and what it states it can do."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor
from torch_geometric.data import Data

from ..._checks import Check, integer, one_of, optional
from ..._registry import NODE_METHODS as REGISTRY
from ..._torchrun import MODES
from ..config import NodeConfig
from ..encoders.features import ColumnMasked, SparseFeatures
from ..encoders.graph_encoder import GraphEncoder
from ..encoders.user import check_encoder, checked_output, output_width
from ..inputs import check_graph, check_view
from ..views import View, config_views, made_by_library, view_pair
from .options import MethodOptions, options_of


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
            :meth:`~cl2gnn.node.GraphEncoder.encode` (its last layer, what training reads)
            takes them (``x`` may keep a column mask apart); else the encoder is called as
            PyG's models are, ``encoder(x, edge_index[, edge_weight=])``.
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


def encoder_input(encoder: torch.nn.Module, view: Data) -> EncoderInput:
    """The graph ``view`` as ``encoder`` reads it in training: the built-in encoder's
    prepared features and propagation graph (its :meth:`~cl2gnn.node.GraphEncoder.encode`,
    the last layer), any other encoder's ``x``, ``edge_index`` and ``edge_weight``."""
    if isinstance(encoder, GraphEncoder):
        graph = encoder.propagation_graph(
            view.edge_index, view.num_nodes, edge_weight=view.get("edge_weight")
        )
        return EncoderInput(encoder.prepare(view.x), graph, prepared=True)
    return EncoderInput(view.x, view.edge_index, view.get("edge_weight"))


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
    """A node-level self-supervised method, as a module a PyG user holds: it owns the
    encoder and what the method adds (heads, predictors, a target encoder, a memory), and
    its call on a graph is the loss of one step::

        method = GRACE(encoder, temperature=0.5)
        loss = method(data)           # two views of data, both through the encoder
        loss.backward(); optimizer.step(); method.after_step(progress)
        z = method.embed(data.x, data.edge_index)

    ``method(data)`` takes a ``Data`` (the whole graph, or a sampled subgraph whose first
    ``data.batch_size`` nodes are the seeds, as PyG's ``NeighborLoader`` gives it), draws
    its two views (:attr:`views`) and returns the loss; a trainer that draws the views
    itself passes a :class:`ViewBatch`. Every method's loss is also a public module of
    :mod:`cl2gnn.losses`.

    A subclass registers itself with ``@register_method("name")`` (its key in
    :data:`~cl2gnn.node.methods.REGISTRY`), declares its options as annotated keyword
    parameters of its ``__init__`` (``temperature: Temperature = 0.4``: from them its
    ``Options`` are made, :func:`~cl2gnn.node.methods.options.options_of`) and states what
    it can do:

    * ``minibatch``: it trains on sampled mini-batches of nodes;
    * ``spans_ranks``: its negatives span the ranks of a process group (``torchrun``);
    * ``reads_graph``: its loss reads the input graph's edges (as positives), which carry
      no ``edge_weight``;
    * ``min_batch_size``: the fewest seed nodes it can train on in one process's share of
      a mini-batch (contrastive methods need a negative);
    * ``weighted_views``: what weighted graph its views are, where they are (MVGRL's
      diffusion): an encoder of one's own must read ``edge_weight``;
    * ``reads_seed_rows_only``: its loss reads the encoder's output on the seed rows alone
      (a mini-batch may skip the layers on rows that cannot reach them).

    Its own compatibility rules beyond these are :meth:`check_compatible`, which the run's
    plan calls before anything is built; what rebuilds its embedding model from saved
    plain values is :meth:`embedding_spec` and :meth:`embedding_model_of`.

    Args:
        encoder (torch.nn.Module): called as ``encoder(x, edge_index[, edge_weight=])``,
            returning ``[N, d]``; or the built-in :class:`~cl2gnn.node.GraphEncoder`.
        options (MethodOptions): the method's options (its ``Options``, checked).
        views (callable or pair, optional): the two views, ``Data -> Data`` (PyG
            transforms), one for both or a pair (default: the method's own,
            :meth:`default_views` of :class:`~cl2gnn.node.NodeConfig`'s defaults).
        dim (int, optional): the width of the encoder's output (default: the built-in
            encoder's last layer, or the encoder's ``out_channels``, as PyG's models have).
        distributed (str, optional): ``"gather"`` or ``"ring"`` under a process group
            (methods with ``spans_ranks``) (default: ``None``).
    """

    name: ClassVar[str]
    minibatch: ClassVar[bool] = True
    spans_ranks: ClassVar[bool] = False
    reads_graph: ClassVar[bool] = False
    min_batch_size: ClassVar[int] = 1
    weighted_views: ClassVar[str | None] = None
    reads_seed_rows_only: ClassVar[bool] = False
    # the arguments of embedding_spec() and their checks (a saved file's are checked so)
    embedding_spec_checks: ClassVar[dict[str, Check]] = {}
    Options: ClassVar[type[MethodOptions]] = MethodOptions

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:  # the options are its constructor's annotated ones
            cls.Options = options_of(cls.__init__, cls.__name__)

    def __init__(
        self,
        encoder: torch.nn.Module,
        options: MethodOptions,
        *,
        views: View | tuple[View, View] | None = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        super().__init__()
        check_encoder(encoder)
        self.encoder = encoder  # first: its parameters lead the optimiser's list
        self.options = options
        self.dim = encoder_width(encoder) if dim is None else integer(1)(dim, "dim")
        self.distributed = optional(one_of(*MODES))(distributed, "distributed")
        self.views = None if views is None else view_pair(views, None)

    # -- the user's face ------------------------------------------------------------------

    def view_batch(self, data: Data | ViewBatch) -> ViewBatch:
        """``data``'s two views as the encoder reads them (:attr:`views`; the method's
        :meth:`default_views` where none were given); a :class:`ViewBatch` as it is. The
        graph is checked (``ValueError`` naming the field), and so is a view of one's own
        (the same nodes, edges in range)."""
        if isinstance(data, ViewBatch):
            return data
        check_graph(data)
        if self.views is None:
            self.views = self.default_views(NodeConfig())
        seeds = data.batch_size if "batch_size" in data else data.num_nodes
        inputs = []
        for view in self.views:
            out = view(copy.copy(data))
            if not made_by_library(view):
                check_view(out, data.num_nodes)
            inputs.append(encoder_input(self.encoder, out))
        return ViewBatch(inputs, data.edge_index, int(seeds), data.get("edge_weight"))

    def encode(self, batch: ViewBatch) -> list[Tensor]:
        """The encoder's output on each view, the seed rows only."""
        return [view(self.encoder)[: batch.num_seeds] for view in batch.views]

    def forward(self, data: Data | ViewBatch) -> Tensor:
        """The loss of one step on ``data`` (:meth:`view_batch`)."""
        raise NotImplementedError

    def embedding_model(self) -> torch.nn.Module:
        """The module whose output is every node's embedding, called as PyG's models are,
        ``model(x, edge_index[, edge_weight=])``: the encoder itself, or for a method that
        embeds with more (MVGRL's second encoder) one module holding it all. What training
        hands back and saves as ``result.encoder``."""
        return self.encoder

    @torch.no_grad()
    def embed(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """Every node's embedding on the graph ``(x, edge_index[, edge_weight])``, in eval
        mode (the mode restored after), without gradients: :meth:`embedding_model`'s
        output, one row per node."""
        was_training = self.training
        self.eval()
        try:
            model = self.embedding_model()
            if edge_weight is None:
                out = model(x, edge_index)
            else:
                out = model(x, edge_index, edge_weight=edge_weight)
        finally:
            self.train(was_training)
        return checked_output(out, x)

    def after_step(self, progress: float = 1.0) -> None:
        """Call after each optimiser step with the fraction of training done (``0 … 1``):
        where a target network follows the encoder (BGRL, GraphACL)."""

    def learning_rates(self) -> dict[torch.nn.Parameter, float]:
        """The parameters that train at a learning rate of their own (PolyGCL's filters),
        by parameter; the others train at the configuration's."""
        return {}

    def default_views(
        self, config: NodeConfig, generator: torch.Generator | None = None
    ) -> tuple[View, View]:
        """The two views it trains on where none are given: the configuration's edge
        dropping and feature masking (``generator``: :class:`~cl2gnn.node.MaskFeatures`')."""
        return config_views(config.drop_edge, config.drop_feature, generator)

    def extra_repr(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self.options.as_dict().items())
        return f"dim={self.dim}" + (f", {options}" if options else "")

    # -- the configuration's path ---------------------------------------------------------

    @classmethod
    def from_config(
        cls,
        config: NodeConfig,
        data: Data,
        *,
        encoder: torch.nn.Module | None = None,
        views: View | tuple[View, View] | None = None,
        distributed: str | None = None,
        generator: torch.Generator | None = None,
        **arguments,
    ) -> NodeMethod:
        """The method as ``config`` describes it, for the graph ``data``: its options from
        ``config.options`` (checked by its own checks), ``encoder`` (``None``: the built-in
        :class:`~cl2gnn.node.GraphEncoder` of ``config``), ``views`` (``None``: its
        :meth:`default_views` of ``config``). What :func:`~cl2gnn.node.train_node_model`
        builds, after its plan (:func:`~cl2gnn.node.training.plan.check_run`) has checked
        the run; ``arguments``: further constructor arguments (a callable objective)."""
        options = cls.Options.of(config.options, cls.name)
        return cls.build(
            options,
            config,
            data,
            encoder=encoder,
            views=views,
            distributed=distributed,
            generator=generator,
            **arguments,
        )

    @classmethod
    def build(
        cls,
        options: MethodOptions,
        config: NodeConfig,
        data: Data,
        *,
        encoder: torch.nn.Module | None = None,
        views: View | tuple[View, View] | None = None,
        distributed: str | None = None,
        generator: torch.Generator | None = None,
        **arguments,
    ) -> NodeMethod:
        """:meth:`from_config` with the options checked already (a run's plan holds them)."""
        if encoder is None:
            encoder = GraphEncoder.from_config(data.num_features, config)
        dim = (
            None
            if isinstance(encoder, GraphEncoder)
            else output_width(encoder, data.x, data.edge_index)
        )
        method = cls(
            encoder,
            **options.as_dict(),
            **cls.config_arguments(config, data),
            **arguments,
            views=views,
            dim=dim,
            distributed=distributed,
        )
        if views is None:
            method.views = method.default_views(config, generator)
        return method

    @classmethod
    def config_arguments(cls, config: NodeConfig, data: Data) -> dict:
        """The constructor's arguments that come from the configuration's core or the graph,
        not from the method's options (the input graph of a method that reads it, say)."""
        return {}

    @classmethod
    def check_compatible(
        cls,
        options: MethodOptions,
        config: NodeConfig,
        data: Data,
        encoder: torch.nn.Module | None,
    ) -> None:
        """``ValueError`` where the method cannot train with ``options`` on ``data`` with
        ``encoder`` (``None``: the built-in encoder ``config`` describes) for a reason of its
        own; called by the run's plan, before anything is built. None by default."""

    # -- saved and loaded back ------------------------------------------------------------

    def embedding_spec(self) -> dict | None:
        """What :meth:`embedding_model` holds besides the encoder, as plain values, for
        :meth:`embedding_model_of` to rebuild it from a saved file (``None``: the encoder
        alone)."""
        return None

    @classmethod
    def embedding_model_of(cls, encoder: torch.nn.Module, spec: dict | None) -> torch.nn.Module:
        """The embedding model around ``encoder`` that :meth:`embedding_spec`'s ``spec``
        describes, its weights to be loaded."""
        return encoder


def encoder_width(encoder: torch.nn.Module) -> int:
    """The width of what training reads from ``encoder``: the built-in encoder's last layer
    (:meth:`~cl2gnn.node.GraphEncoder.encode`), else its ``out_channels`` (PyG's models
    declare it); ``ValueError`` asking for ``dim`` where it says none."""
    if isinstance(encoder, GraphEncoder):
        return encoder.widths[-1]
    width = getattr(encoder, "out_channels", None)
    if isinstance(width, int) and not isinstance(width, bool) and width >= 1:
        return width
    raise ValueError(
        "dim: the width of the encoder's output is unknown (it has no out_channels): pass "
        "dim=, the width of encoder(x, edge_index)"
    )


def register_method(name: str):
    """Class decorator: the method, named ``name``, in :data:`REGISTRY`."""
    return REGISTRY.register(name)
