"""FAISS's search for :func:`cl2gnn.graphs.knn_graph` (the torch one: :mod:`.knn_tiles`).

It returns ``(index [M, k], score [M, k], found [N])``: the ``k`` best rows for every query
row that has ``k`` of them (``found``; all rows except in a starved IVF search), self
excluded, best first. Scores are similarities for ``"ip"`` (inner product on rows already
L2-normalised for cosine) and squared distances for ``"l2"``.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor

from ._faiss import faiss_has_gpu, load_faiss


def knn_faiss(
    x: Tensor, k: int, metric: str, index_type: str, nlist: int | None, nprobe: int
) -> tuple[Tensor, Tensor, Tensor]:
    """FAISS flat or IVF index; on a GPU index when ``x`` is on CUDA and faiss has GPUs."""
    faiss = load_faiss()
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
