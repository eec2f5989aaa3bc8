"""Augmentation- and affinity-graph builders and their diagnostics."""

from .contextual_sbm import contextual_sbm, write_npz
from .diagnostics import ClassSpectrum, algebraic_connectivity, class_spectra, normalized_laplacian
from .knn import knn_graph
from .knn_backends import faiss_available, faiss_has_gpu
from .pair import pair_graph
from .radius import radius_graph
from .sampling import TorchNeighborSampler, neighbor_loader
from .sbm import sbm_graph

__all__ = [
    "ClassSpectrum",
    "TorchNeighborSampler",
    "algebraic_connectivity",
    "class_spectra",
    "contextual_sbm",
    "faiss_available",
    "faiss_has_gpu",
    "knn_graph",
    "neighbor_loader",
    "normalized_laplacian",
    "pair_graph",
    "radius_graph",
    "sbm_graph",
    "write_npz",
]
