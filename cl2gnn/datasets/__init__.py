"""Graphs to train on: the real datasets (PyG's, the heterophilous ``.npz`` files, the
embedded digits graph), the ``.npz`` reader and writer, and the generators of synthetic
graphs (stochastic block models, contextual SBMs of OGB graphs' sizes).

The names load on first use (PEP 562), so that :mod:`cl2gnn.datasets.names` imports
without torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # the exports, read by lazy_exports
    from .generators import contextual_sbm, sbm_graph
    from .names import DATASETS, PRESETS
    from .nodes import (
        digits_knn_graph,
        feature_knn_dataset,
        heterophilous_graph,
        load_node_dataset,
    )
    from .npz import read_npz_graph, write_npz

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals())
