"""The configuration a method trains with on a graph when none is given: the published ones
of :mod:`cl2gnn.node.config`, made acceptable to every registered method."""

from __future__ import annotations

from dataclasses import replace

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
from .methods import method_class


def default_method(graph) -> str:
    """The method a graph (a name or a ``Data``) trains with when none is named: GRACE where
    the graph has a published configuration (:data:`GRACE_PUBLISHED`), else
    :data:`OTHER_GRAPHS_METHOD`."""
    return "grace" if graph_name(graph) in GRACE_PUBLISHED else OTHER_GRAPHS_METHOD


def default_config(graph, method: str | None = None) -> NodeConfig:
    """``method``'s configuration for ``graph`` (a name, or a ``Data``: its ``name``, if
    any): its authors' for that graph where they publish one, else the method's own
    (:data:`METHOD_DEFAULTS`), else for the GRACE-family methods the graph's published
    configuration (:data:`GRACE_PUBLISHED`), else GRACE's for graphs without one. ``None``: the
    configuration of :func:`default_method` — the graph's published one, else
    :data:`OTHER_GRAPHS`. Every registered method accepts what this returns, on any graph:
    sampled keys are kept for the methods that take them only."""
    dataset = graph_name(graph)
    if method is None:
        method = default_method(graph)
        config = GRACE_PUBLISHED.get(dataset, OTHER_GRAPHS)
    elif (method, dataset) in AUTHORS_PER_GRAPH:
        config = AUTHORS_PER_GRAPH[method, dataset]
    elif method in METHOD_DEFAULTS:
        config = METHOD_DEFAULTS[method]
    else:
        config = GRACE_PUBLISHED.get(dataset, GRACE_OTHER_GRAPHS)
    if config.num_keys is not None and not method_class(method).takes_keys:
        config = replace(config, num_keys=None)
    return config
