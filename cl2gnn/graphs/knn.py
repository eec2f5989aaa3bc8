"""k-nearest-neighbor augmentation graphs (FAISS or tiled torch)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import coalesce, to_undirected

from .._validation import check_features
from .knn_backends import faiss_available, faiss_has_gpu, knn_faiss, knn_torch

METRICS = ("cosine", "ip", "l2")
BACKENDS = ("auto", "faiss", "torch")


def knn_graph(
    x: Tensor,
    k: int = 10,
    metric: str = "cosine",
    *,
    backend: str = "auto",
    index: str = "flat",
    nlist: int | None = None,
    nprobe: int = 16,
    symmetrize: str | None = None,
    tile_size: int = 1024,
    return_scores: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""The kNN graph of the rows of ``x``, each row's ``k`` nearest others.

    Args:
        x (torch.Tensor): features ``[N, d]``.
        k (int, optional): neighbors per row, ``1 <= k < N`` (default: ``10``).
        metric (str, optional): ``"cosine"`` (rows are L2-normalised, zero rows stay
            zero), ``"ip"`` (inner product) or ``"l2"`` (Euclidean) (default: ``"cosine"``).
        backend (str, optional): ``"faiss"`` (a GPU index when ``x`` is on CUDA and faiss
            has GPU support, else a CPU index), ``"torch"`` (tiled matmul + top-k on
            ``x``'s device) or ``"auto"`` (faiss when it can use ``x``'s device, else
            torch) (default: ``"auto"``).
        index (str, optional): faiss index, ``"flat"`` (exact) or ``"ivf"``
            (approximate, for large ``N``) (default: ``"flat"``).
        nlist (int, optional): IVF cells (default: ``4 * sqrt(N)``).
        nprobe (int, optional): IVF cells visited per query (default: ``16``).
        symmetrize (str, optional): ``None`` (directed kNN), ``"union"`` (keep an edge
            if either end chose the other) or ``"mutual"`` (only if both did).
        tile_size (int, optional): query rows per tile of the torch backend (default: ``1024``).
        return_scores (bool, optional): also return each edge's similarity (``cosine`` /
            ``ip``) or squared distance (``l2``); not with ``symmetrize``.

    Returns:
        ``edge_index`` ``[2, N * k]`` (without ``symmetrize``) in PyG's convention:
        ``edge_index[0]`` the neighbor (source), ``edge_index[1]`` the query row
        (target), grouped by target with the nearest first. Self pairs are excluded,
        also when ``x`` has duplicate rows.
    """
    check_features(x)
    n = x.size(0)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if index not in ("flat", "ivf"):
        raise ValueError(f"index must be 'flat' or 'ivf', got {index!r}")
    if symmetrize not in (None, "union", "mutual"):
        raise ValueError(f"symmetrize must be None, 'union' or 'mutual', got {symmetrize!r}")
    if not 1 <= k < n:
        raise ValueError(f"k must satisfy 1 <= k < N = {n}, got k={k}")
    if return_scores and symmetrize is not None:
        raise ValueError("return_scores is only available without symmetrize")
    if backend == "auto":
        backend = "faiss" if faiss_available() and (not x.is_cuda or faiss_has_gpu()) else "torch"
    if backend == "torch" and index != "flat":
        raise ValueError("the torch backend is exact; index='ivf' needs backend='faiss'")
    if backend == "faiss" and not faiss_available():
        raise ValueError("backend='faiss' needs the faiss package (pip install faiss-cpu)")

    feats = x.detach()
    if metric == "cosine":
        feats = F.normalize(feats, dim=-1)
    search_metric = "l2" if metric == "l2" else "ip"
    if backend == "torch":
        nbr, score, found = knn_torch(feats, k, search_metric, tile_size)
    else:
        nbr, score, found = knn_faiss(feats, k, search_metric, index, nlist, nprobe)
    query = torch.arange(n, device=x.device)[found].repeat_interleave(k)
    edge_index = torch.stack([nbr.reshape(-1), query])
    if symmetrize == "union":
        return to_undirected(edge_index, num_nodes=n)
    if symmetrize == "mutual":
        return _mutual(edge_index, n)
    return (edge_index, score.reshape(-1)) if return_scores else edge_index


def _mutual(edge_index: Tensor, n: int) -> Tensor:
    key = edge_index[0] * n + edge_index[1]
    reverse = edge_index[1] * n + edge_index[0]
    return coalesce(edge_index[:, torch.isin(key, reverse)], num_nodes=n)
