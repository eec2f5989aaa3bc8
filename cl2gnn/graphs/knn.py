"""k-nearest-neighbor augmentation graphs (FAISS or torch tiles)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import coalesce, to_undirected

from .._checks import integer
from .._validation import check_features
from ._faiss import FAISS_GPU_MAX_K, faiss_available, faiss_has_gpu, faiss_problem
from .knn_backends import knn_faiss
from .knn_tiles import TILE_PRECISIONS, knn_tiles

METRICS = ("cosine", "ip", "l2")
BACKENDS = ("auto", "faiss", "torch")
PRECISIONS = ("auto", *TILE_PRECISIONS)


# rows per tile of the torch search: a CUDA tile must be large enough for its GEMM and
# top-k to outlast their launches (8192² float32 scores: 256 MiB)
TILE_SIZE = {"cpu": 1024, "cuda": 8192}


def knn_graph(
    x: Tensor,
    k: int = 10,
    metric: str = "cosine",
    *,
    backend: str = "auto",
    precision: str = "auto",
    index: str = "flat",
    nlist: int | None = None,
    nprobe: int = 16,
    symmetrize: str | None = None,
    tile_size: int | None = None,
    return_scores: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""The kNN graph of the rows of ``x``, each row's ``k`` nearest others.

    Args:
        x (torch.Tensor): features ``[N, d]``.
        k (int, optional): neighbors per row, ``1 <= k < N`` (default: ``10``).
        metric (str, optional): ``"cosine"`` (rows are L2-normalised, zero rows stay
            zero), ``"ip"`` (inner product) or ``"l2"`` (Euclidean) (default: ``"cosine"``).
        backend (str, optional): ``"faiss"`` (a GPU index when ``x`` is on CUDA and faiss
            runs there, else a CPU index), ``"torch"`` (tiled matmul + top-k on ``x``'s
            device) or ``"auto"`` (faiss when it runs on ``x``'s device, else torch; torch
            when ``precision`` names tiles) (default: ``"auto"``). A faiss that is
            installed but does not load (a GPU wheel without its CUDA libraries) counts as
            absent.
        precision (str, optional): the torch tiles' arithmetic: ``"full"`` (float32, or
            float64 for float64 rows), ``"tf32"`` or ``"bf16"`` (reduced-precision tiles
            on the tensor cores, or AMX for bf16 on the CPU; TF32 on the CPU is emulated,
            not faster), whose candidates are re-ranked exactly and whose rows that the
            rounding error bound cannot certify are searched again in full: the same
            neighbors as ``"full"`` (:mod:`cl2gnn.graphs.knn_tiles`), or ``"auto"``
            (``"tf32"`` on a CUDA device that has it, for rows that are not float64; else
            ``"full"``) (default: ``"auto"``). Every choice is exact.
        index (str, optional): faiss index, ``"flat"`` (exact) or ``"ivf"``
            (approximate, for large ``N``) (default: ``"flat"``).
        nlist (int, optional): IVF cells (default: ``4 * sqrt(N)``).
        nprobe (int, optional): IVF cells visited per query (default: ``16``).
        symmetrize (str, optional): ``None`` (directed kNN), ``"union"`` (keep an edge
            if either end chose the other) or ``"mutual"`` (only if both did).
        tile_size (int, optional): rows per tile of the torch backend, which holds
            ``tile_size²`` scores at a time (default: ``1024`` on the CPU, ``8192`` on CUDA).
        return_scores (bool, optional): also return each edge's similarity (``cosine`` /
            ``ip``) or squared distance (``l2``); not with ``symmetrize``.

    Returns:
        ``edge_index`` ``[2, N * k]`` (without ``symmetrize``) in PyG's convention:
        ``edge_index[0]`` the neighbor (source), ``edge_index[1]`` the query row
        (target), grouped by target with the nearest first (the torch backend: equal
        scores in index order). Self pairs are excluded, also when ``x`` has duplicate rows.
    """
    check_features(x)
    n = x.size(0)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if index not in ("flat", "ivf"):
        raise ValueError(f"index must be 'flat' or 'ivf', got {index!r}")
    if symmetrize not in (None, "union", "mutual"):
        raise ValueError(f"symmetrize must be None, 'union' or 'mutual', got {symmetrize!r}")
    if not 1 <= k < n:
        raise ValueError(f"k must satisfy 1 <= k < N = {n}, got k={k}")
    if tile_size is not None:
        integer(1)(tile_size, "tile_size")
    if return_scores and symmetrize is not None:
        raise ValueError("return_scores is only available without symmetrize")
    backend, precision = choose_search(backend, precision, index, k, x.device, x.dtype)

    feats = x.detach()
    if metric == "cosine":
        feats = F.normalize(feats, dim=-1)
    search_metric = "l2" if metric == "l2" else "ip"
    if backend == "torch":
        tile = tile_size or default_tile_size(x.device)
        nbr, score, _ = knn_tiles(feats, k, search_metric, tile, precision)
        found = torch.ones(n, dtype=torch.bool, device=x.device)
    else:
        nbr, score, found = knn_faiss(feats, k, search_metric, index, nlist, nprobe)
    query = torch.arange(n, device=x.device)[found].repeat_interleave(k)
    edge_index = torch.stack([nbr.reshape(-1), query])
    if symmetrize == "union":
        return to_undirected(edge_index, num_nodes=n)
    if symmetrize == "mutual":
        return _mutual(edge_index, n)
    return (edge_index, score.reshape(-1)) if return_scores else edge_index


def choose_search(
    backend: str, precision: str, index: str, k: int, device: torch.device, dtype: torch.dtype
) -> tuple[str, str]:
    """The ``(backend, precision)`` that :func:`knn_graph` runs for these options on rows of
    ``dtype`` on ``device`` (``precision`` is ``"auto"`` for faiss)."""
    if backend == "auto":
        if precision != "auto":
            backend = "torch"  # a tile precision asks for the torch tiles
        elif device.type == "cuda":
            backend = "faiss" if faiss_has_gpu() and k < FAISS_GPU_MAX_K else "torch"
        else:
            backend = "faiss" if faiss_available() else "torch"
    if backend == "faiss":
        if not faiss_available():
            raise ValueError(
                f"backend='faiss' needs the faiss package, which does not load here "
                f"({faiss_problem()}); pip install faiss-cpu, or use backend='torch'"
            )
        if precision != "auto":
            raise ValueError(f"precision={precision!r} is the torch backend's; faiss has none")
        return backend, precision
    if index != "flat":
        raise ValueError("the torch backend is exact; index='ivf' needs backend='faiss'")
    if precision == "auto":
        fast = device.type == "cuda" and dtype != torch.float64 and has_tf32(device)
        precision = "tf32" if fast else "full"
    return backend, precision


def default_tile_size(device: torch.device) -> int:
    return TILE_SIZE.get(device.type, TILE_SIZE["cpu"])


def has_tf32(device: torch.device) -> bool:
    """The CUDA device has TF32 tensor cores (Ampere, compute capability 8.0, and later)."""
    return torch.cuda.get_device_capability(device) >= (8, 0)


def _mutual(edge_index: Tensor, n: int) -> Tensor:
    key = edge_index[0] * n + edge_index[1]
    reverse = edge_index[1] * n + edge_index[0]
    return coalesce(edge_index[:, torch.isin(key, reverse)], num_nodes=n)
