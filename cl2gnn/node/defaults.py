"""The configuration a method trains with on a graph when none is given: the published ones
of :mod:`cl2gnn.node.config`, made acceptable to every registered method."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch
from torch import Tensor

from .config import (
    AUTHORS_PER_GRAPH,
    GRACE_OTHER_GRAPHS,
    GRACE_PUBLISHED,
    METHOD_DEFAULTS,
    OTHER_GRAPHS,
    OTHER_GRAPHS_METHOD,
    NodeConfig,
    graph_name,
)
from .inputs import check_encoder
from .methods import method_type
from .training.trainer import BUILTIN_ONLY


def default_method(graph) -> str:
    """The method a graph (a name or a ``Data``) trains with when none is named: GRACE where
    the graph has a published configuration (:data:`GRACE_PUBLISHED`), else
    :data:`OTHER_GRAPHS_METHOD`."""
    return "grace" if graph_name(graph) in GRACE_PUBLISHED else OTHER_GRAPHS_METHOD


def default_config(
    graph,
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor] | None = None,
    *,
    encoder: torch.nn.Module | None = None,
) -> NodeConfig:
    """``method``'s configuration for ``graph`` (a name, or a ``Data``: its ``name``, if
    any): its authors' for that graph where they publish one, else the method's own
    (:data:`METHOD_DEFAULTS`), else for the GRACE-family methods (and an objective
    ``(z1, z2, h1, h2) -> loss`` on GRACE's scheme) the graph's published configuration
    (:data:`GRACE_PUBLISHED`), else GRACE's for graphs without one. ``None``: the
    configuration of :func:`default_method` — the graph's published one, else
    :data:`OTHER_GRAPHS`. Every registered method accepts what this returns, on any graph:
    sampled keys are kept for the methods that take them only.

    ``encoder``: an encoder of one's own, which the configuration is for: the built-in
    encoder's fields (:data:`~cl2gnn.node.training.trainer.BUILTIN_ONLY`) are left at their defaults,
    and the recipe's feature normalisation is kept, applied to ``data.x`` before the encoder
    reads it (:func:`~cl2gnn.node.training.trainer.feature_transform`)."""
    dataset = graph_name(graph)
    # an objective of one's own trains on GRACE's scheme, with GRACE's configurations
    name = "grace" if callable(method) else method
    if name is None:
        method = name = default_method(graph)
        config = GRACE_PUBLISHED.get(dataset, OTHER_GRAPHS)
    elif (name, dataset) in AUTHORS_PER_GRAPH:
        config = AUTHORS_PER_GRAPH[name, dataset]
    elif name in METHOD_DEFAULTS:
        config = METHOD_DEFAULTS[name]
    else:
        config = GRACE_PUBLISHED.get(dataset, GRACE_OTHER_GRAPHS)
    if config.num_keys is not None and not method_type(method).takes_keys:
        config = replace(config, num_keys=None)
    if encoder is not None:
        check_encoder(encoder)
        defaults = NodeConfig()
        config = replace(config, **{field: getattr(defaults, field) for field in BUILTIN_ONLY})
    return config
