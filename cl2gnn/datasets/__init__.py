"""Graphs to train on: the real datasets (PyG's, the heterophilous ``.npz`` files, the
embedded digits graph), the ``.npz`` reader and writer, and the generators of synthetic
graphs (stochastic block models, contextual SBMs of OGB graphs' sizes)."""

from __future__ import annotations

from .generators import PRESETS, contextual_sbm, sbm_graph
from .nodes import (
    DATASETS,
    digits_knn_graph,
    feature_knn_dataset,
    heterophilous_graph,
    load_node_dataset,
)
from .npz import read_npz_graph, write_npz

__all__ = [
    "DATASETS",
    "PRESETS",
    "contextual_sbm",
    "digits_knn_graph",
    "feature_knn_dataset",
    "heterophilous_graph",
    "load_node_dataset",
    "read_npz_graph",
    "sbm_graph",
    "write_npz",
]
