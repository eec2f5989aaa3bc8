"""Exact and approximate top-k search backends for :func:`cl2gnn.graphs.knn_graph`.

Each backend returns ``(index [M, k], score [M, k], found [N])``: the ``k`` best rows for
every query row that has ``k`` of them (``found``; all rows except in a starved IVF
search), self excluded, best first. Scores are similarities for ``"ip"`` (inner
product on rows already L2-normalised for cosine) and squared distances for ``"l2"``.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor


def faiss_available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def faiss_has_gpu() -> bool:
    if not faiss_available():
        return False
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def knn_torch(x: Tensor, k: int, metric: str, tile_size: int) -> tuple[Tensor, Tensor, Tensor]:
    """Tiled matmul + top-k on ``x``'s device: O(tile_size * N) extra memory."""
    n = x.size(0)
    sq = (x * x).sum(-1) if metric == "l2" else None
    index, score = [], []
    for start in range(0, n, tile_size):
        q = x[start : start + tile_size]
        s = q @ x.T
        if sq is not None:  # rank by -||q - x||^2 so that larger is better throughout
            s.mul_(2).sub_(sq[start : start + tile_size, None]).sub_(sq[None, :])
        rows = torch.arange(q.size(0), device=x.device)
        s[rows, rows + start] = float("-inf")
        val, idx = s.topk(k, dim=1)
        index.append(idx)
        score.append(-val.clamp(max=0) if sq is not None else val)
    found = torch.ones(n, dtype=torch.bool, device=x.device)
    return torch.cat(index), torch.cat(score), found


def knn_faiss(
    x: Tensor, k: int, metric: str, index_type: str, nlist: int | None, nprobe: int
) -> tuple[Tensor, Tensor, Tensor]:
    """FAISS flat or IVF index; on a GPU index when ``x`` is on CUDA and faiss has GPUs."""
    import faiss

    data = np.ascontiguousarray(x.detach().to("cpu", torch.float32).numpy())
    n, d = data.shape
    faiss_metric = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    if index_type == "flat":
        index = faiss.IndexFlat(d, faiss_metric)
    else:
        nlist = nlist or max(1, min(int(4 * np.sqrt(n)), n // 39))  # faiss wants 39 points/cell
        quantizer = faiss.IndexFlat(d, faiss_metric)
        index = faiss.IndexIVFFlat(quantizer, d, min(nlist, n), faiss_metric)
    resources = None
    if x.is_cuda and faiss_has_gpu():
        resources = faiss.StandardGpuResources()
        index = faiss.index_cpu_to_gpu(resources, x.device.index or 0, index)
    if index_type == "ivf":
        index.train(data)
        faiss.extract_index_ivf(index).nprobe = nprobe if resources is None else min(nprobe, 2048)
    index.add(data)
    dist, idx = index.search(data, k + 1)
    idx_t = torch.from_numpy(idx)
    keep = (idx_t != torch.arange(n)[:, None]) & (idx_t >= 0)
    keep &= torch.cumsum(keep, dim=1) <= k  # a duplicate may push self out of the k + 1
    found = keep.sum(1)
    if bool((found < k).any()):
        warnings.warn(
            f"IVF search found fewer than k={k} neighbors for {int((found < k).sum())} rows; "
            "raise nprobe or use index='flat'",
            stacklevel=3,
        )
        keep &= found[:, None] == k
    idx_t = idx_t[keep].view(-1, k)
    score = torch.from_numpy(dist)[keep].view(-1, k)
    return idx_t.to(x.device), score.to(x.device, x.dtype), (found == k).to(x.device)
