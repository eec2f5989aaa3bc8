"""Augmentation- and affinity-graph builders, neighbor sampling and their diagnostics.

The names load on first use (PEP 562), so that :mod:`cl2gnn.graphs.names` imports without
torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # the exports, read by lazy_exports
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

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals())
