"""The entry point of node-level training: :func:`train_node_model`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import torch
from torch import Tensor
from torch_geometric.data import Data

from .config import NodeConfig
from .evaluation.auto import choose_method, scoring_seeds
from .methods import method_type
from .presets import (
    AUTHORS_PER_GRAPH,
    GRACE_OTHER_GRAPHS,
    GRACE_PUBLISHED,
    METHOD_DEFAULTS,
    OTHER_GRAPHS,
    OTHER_GRAPHS_METHOD,
    graph_name,
)
from .result import TrainResult
from .training.fit import train_run
from .training.plan import check_schedule, for_own_encoder
from .views import View

# the method that chooses among candidates on the graph's own validation nodes
# (cl2gnn.node.evaluation.auto), the command's default
AUTO = "auto"


def default_method(graph: str | None = None) -> str:
    """The method a graph trains with when none is named: GRACE where the graph named
    ``graph`` has a published configuration
    (:data:`~cl2gnn.node.presets.GRACE_PUBLISHED`), else
    :data:`~cl2gnn.node.presets.OTHER_GRAPHS_METHOD` (a graph without a name included)."""
    return "grace" if graph_name(graph) in GRACE_PUBLISHED else OTHER_GRAPHS_METHOD


def _own_options(
    config: NodeConfig, method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
) -> NodeConfig:
    """``config`` with the options ``method`` has and no other (a preset may carry another
    method's: what is handed back is the method's own configuration)."""
    names = method_type(method).Options.names()
    return replace(config, options={k: v for k, v in config.options.items() if k in names})


def preset(method: str, dataset: str | None) -> tuple[NodeConfig, str]:
    """``method``'s configuration for the graph named ``dataset`` (``None``: a graph without
    a name) and what it is, in words (:mod:`cl2gnn.node.presets`)."""
    if (method, dataset) in AUTHORS_PER_GRAPH:
        return AUTHORS_PER_GRAPH[method, dataset], f"{method}: its authors' for {dataset}"
    if method in METHOD_DEFAULTS:
        return METHOD_DEFAULTS[method], f"{method}: its authors' configuration"
    if dataset in GRACE_PUBLISHED:
        return GRACE_PUBLISHED[dataset], f"{method}: GRACE's published for {dataset}"
    return GRACE_OTHER_GRAPHS, f"{method}: the general default ({_unpublished(dataset)})"


def _unpublished(dataset: str | None) -> str:
    if dataset is None:
        return "no graph named: no published configuration"
    return f"{dataset} has no published configuration"


def default_config(
    data: Data | str | None = None,
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor] | None = None,
    *,
    graph: str | None = None,
    encoder: torch.nn.Module | None = None,
) -> NodeConfig:
    """``method``'s configuration (:mod:`cl2gnn.node.presets`), for the graph ``graph``
    names: its authors' for that graph where they publish one, else the method's own, else
    for the GRACE-family methods (and an objective ``(z1, z2, h1, h2) -> loss`` on GRACE's
    scheme) the graph's published configuration, else GRACE's for graphs without one.
    ``None``: the configuration of :func:`default_method`. Every registered method accepts
    what this returns, on any graph: it keeps the options the method has (sampled keys only
    for the methods that take them). ``config.preset`` says which configuration it took.

    The graph's configuration is chosen by name only where a name is given: ``graph``, or
    ``data`` itself where it is a name (``default_config("Cora", "grace")``). A ``Data``'s
    own attributes are never read, so the same graph gets the same configuration however it
    was loaded (PyG's ``Planetoid`` or :func:`~cl2gnn.datasets.load_node_dataset`); a graph
    without a name gets the method's general configuration, and ``preset`` says so.

    ``encoder``: an encoder of one's own, which the configuration is for: the built-in
    encoder's fields (:data:`~cl2gnn.node.training.plan.BUILTIN_ONLY`) are left at their
    defaults (:func:`~cl2gnn.node.training.plan.for_own_encoder`), and the recipe's feature
    normalisation is kept, applied to ``data.x`` before the encoder reads it
    (:func:`~cl2gnn.node.encoders.user.feature_transform`) and saved with it."""
    if graph is not None and not isinstance(graph, str):
        raise ValueError(f"graph: the name of a graph's configuration, got {graph!r}")
    dataset = graph if graph is not None else data if isinstance(data, str) else None
    # an objective of one's own trains on GRACE's scheme, with GRACE's configurations
    name = "grace" if callable(method) else method
    if name is None:
        method = name = default_method(dataset)
        config = GRACE_PUBLISHED.get(dataset, OTHER_GRAPHS)
        what = (
            f"grace: GRACE's published for {dataset}"
            if dataset in GRACE_PUBLISHED
            else f"{name}: the general default ({_unpublished(dataset)})"
        )
    else:
        method_type(method)  # a name no method has: ValueError naming the choices
        config, what = preset(name, dataset)
    config = replace(_own_options(config, method), preset=what)
    if encoder is not None:
        config = replace(for_own_encoder(config), preset=f"{what}, for your own encoder")
    return config


def train_node_model(
    data: Data,
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
    config: NodeConfig | None = None,
    *,
    encoder: torch.nn.Module | None = None,
    augment: View | Sequence[View] | None = None,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = True,
    snapshot_every: int = 0,
    resume: str | Path | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 0,
    select_epoch: bool = False,
) -> TrainResult:
    """Train an encoder on ``data`` with ``method`` — a name of
    :data:`~cl2gnn.node.methods.REGISTRY`, any callable ``(z1, z2, h1, h2) -> loss`` of the
    projections and encoder outputs on GRACE's scheme, or ``"auto"`` (the candidate with the
    best validation score on ``data``, :func:`~cl2gnn.node.evaluation.auto.choose_method`; its
    ``result.choice`` says which and why) — and return the trained encoder with its
    embeddings (:class:`~cl2gnn.node.result.TrainResult`).

    Args:
        data: the graph: ``x`` ``[N, F]`` floating point, ``edge_index`` ``[2, E]``, and
            optionally ``edge_weight`` ``[E]`` (checked: ``ValueError`` naming the field).
        method: what to train with.
        config: the settings (:class:`NodeConfig`); ``None``: :func:`default_config` of
            ``data``, ``method`` and ``encoder``.
        encoder: any ``torch.nn.Module`` called as ``encoder(x, edge_index)`` (with
            ``edge_weight=`` where ``data`` has weights) that returns ``[N, d]`` (checked at
            every call); it reads ``data.x`` after ``result.transform`` (the
            configuration's ``normalize_features``), and ``config``'s fields of the built-in
            encoder must keep their defaults (``default_config(data, method,
            encoder=encoder)`` leaves them so). ``None``: the built-in
            :class:`~cl2gnn.node.GraphEncoder` that ``config`` describes.
        augment: the views: a callable ``Data -> Data`` (a PyG transform, or
            ``Compose`` of them) for both, or a pair (one per view); ``None``: the
            configuration's :class:`~cl2gnn.node.DropEdge` and
            :class:`~cl2gnn.node.MaskFeatures`.
        seed: seeds torch, NumPy and Python (the built-in encoder's initial weights, the
            views).
        device: where to train.
        progress: a progress bar over the epochs.
        snapshot_every: also keep the embeddings every that many epochs.
        resume: continue the run saved there (a ``seed_<k>`` folder of
            :meth:`~cl2gnn.node.TrainResult.save`, or its ``checkpoint.pt``) from its
            epoch, to ``config.epochs``: the same method, configuration (``epochs`` may
            grow), seed, graph and encoder class, else ``ValueError``. The result is the
            uninterrupted run's, bit for bit on the CPU: the run the checkpoint was
            written in, or a longer one where the schedules do not read the number of
            epochs (``lr_cosine``, ``ema_cosine``).
        checkpoint, checkpoint_every: write the run's state to the folder ``checkpoint``
            (``checkpoint.pt``) after every ``checkpoint_every`` epochs, for ``resume``.
        select_epoch: hand back the run at the checkpoint with the best validation score
            (at 0, 1/8, 1/4, 1/2 or all of its epochs, as method ``"auto"`` chooses,
            :func:`~cl2gnn.node.evaluation.auto.choose_method`; on seed ``seed``'s
            validation nodes, so the graph needs that split; ``result.epoch`` says which
            where it is not the last, ``result.choice`` why). Method ``"auto"`` always does.

    With ``config.epochs == 0`` the embeddings are the encoder's at its initialisation (a
    baseline). Full-batch by default; ``config.batch_size`` trains on mini-batches of seed
    nodes and their sampled neighborhoods, in one process or, under ``torchrun``, across
    the process group."""
    if method != AUTO and config is None:
        config = default_config(data, method, encoder=encoder)
    check_schedule(
        config,
        auto=method == AUTO,
        select_epoch=select_epoch,
        resume=resume is not None,
        checkpoint_every=checkpoint_every,
        folder=resume is not None or checkpoint is not None,
    )
    if method == AUTO:
        return _auto(data, config, encoder, augment, seed, device, progress)
    if select_epoch:
        label = method if isinstance(method, str) else getattr(method, "__name__", "objective")
        choice = choose_method(
            data,
            [seed],
            device=device,
            progress=progress,
            listed=[(label, method, config)],
            encoder=encoder,
            augment=augment,
        )
        result = choice.results[seed]
        result.choice = choice
        return result
    return train_run(
        data,
        method,
        config,
        seed=seed,
        progress=progress,
        snapshot_every=snapshot_every,
        resume=resume,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        encoder=encoder,
        augment=augment,
        device=device,
    )


def _auto(data, config, encoder, augment, seed, device, progress) -> TrainResult:
    if config is not None:
        raise ValueError(
            "config: method 'auto' chooses among the candidates' own configurations "
            "(cl2gnn.node.presets.CANDIDATES): pass none, or call "
            "choose_method(data, changes={...}) to change their fields"
        )
    choice = choose_method(
        data,
        scoring_seeds(data, seed),
        device=device,
        progress=progress,
        encoder=encoder,
        augment=augment,
    )
    result = choice.results[seed]
    result.choice = choice
    return result
