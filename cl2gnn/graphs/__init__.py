"""Augmentation- and affinity-graph builders, neighbor sampling and their diagnostics."""

from __future__ import annotations

from ._faiss import faiss_available, faiss_has_gpu
from .diagnostics import (
    ClassSpectrum,
    algebraic_connectivity,
    class_spectra,
    normalized_laplacian,
)
from .kmeans import cluster_labels, spherical_kmeans
from .knn import knn_graph
from .pair import cached_pair_graph, pair_graph
from .radius import radius_graph
from .sampling import TorchNeighborSampler, neighbor_loader

__all__ = [
    "ClassSpectrum",
    "TorchNeighborSampler",
    "algebraic_connectivity",
    "cached_pair_graph",
    "class_spectra",
    "cluster_labels",
    "faiss_available",
    "faiss_has_gpu",
    "knn_graph",
    "neighbor_loader",
    "normalized_laplacian",
    "pair_graph",
    "radius_graph",
    "spherical_kmeans",
]
