"""Spherical k-means of feature rows: FAISS's where it loads, torch's (on any device)
otherwise."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from .._checks import integer
from .._validation import check_features
from ._faiss import load_faiss

ITERATIONS = 20  # FAISS's Kmeans default, what the node methods have always used


def spherical_kmeans(
    x: Tensor, clusters: int, iterations: int = ITERATIONS, init: Tensor | None = None
) -> Tensor:
    r"""Spherical k-means (Dhillon & Modha, 2001) of the rows of ``x``: rows and centroids on
    the unit sphere, each row assigned to the centroid of largest cosine,

    .. math::
        \ell_i \leftarrow \arg\max_j \hat x_i \cdot c_j, \qquad
        c_j \leftarrow \frac{\sum_{i:\,\ell_i = j} \hat x_i}{\|\sum_{i:\,\ell_i = j} \hat x_i\|},

    from greedy k-means++ seeds (Arthur & Vassilvitskii, 2007; distance ``1 - cos``) drawn with
    torch's global generator, so that seeded runs repeat. A cluster left empty is re-seeded
    with the row farthest (lowest cosine) from its centroid.

    Args:
        x (torch.Tensor): features ``[N, d]`` (a zero row, at cosine 0 from every
            centroid, joins cluster 0).
        clusters (int): centroids, ``1 <= clusters <= N``.
        iterations (int, optional): assignment and update rounds (default: ``20``).
        init (torch.Tensor, optional): initial centroids ``[clusters, d]`` instead of the
            k-means++ seeds (normalised here).

    Returns:
        The labels ``[N]`` (int64, on ``x``'s device).
    """
    check_features(x)
    integer(1, x.size(0))(clusters, "clusters")
    integer(1)(iterations, "iterations")
    data = F.normalize(x.detach().float(), dim=1)
    if init is None:
        centroids = _kmeans_plus_plus(data, clusters)
    elif init.shape != (clusters, x.size(1)):
        raise ValueError(f"init must have shape {(clusters, x.size(1))}, got {tuple(init.shape)}")
    else:
        centroids = F.normalize(init.detach().to(data), dim=1)
    for _ in range(iterations):
        cosine, labels = (data @ centroids.T).max(dim=1)
        sums = torch.zeros_like(centroids).index_add_(0, labels, data)
        empty = torch.bincount(labels, minlength=clusters) == 0
        if bool(empty.any()):
            sums[empty] = data[cosine.topk(int(empty.sum()), largest=False).indices]
        centroids = F.normalize(sums, dim=1)
    return (data @ centroids.T).argmax(dim=1)


def _kmeans_plus_plus(data: Tensor, clusters: int) -> Tensor:
    """Greedy k-means++ seeds among the unit rows ``data`` (scikit-learn's rule): each next
    seed the best, by the total distance left, of ``2 + ln(clusters)`` rows drawn with
    probability proportional to their cosine distance from the nearest seed so far (zero
    rows are never drawn while others remain)."""
    nonzero = (data.abs().sum(1) > 0).float()
    tries = 2 + int(math.log(clusters))
    seeds = _draw(nonzero, 1)
    distance = (1 - data @ data[seeds[0]]).clamp(min=0)
    for _ in range(clusters - 1):
        drawn = torch.as_tensor(_draw(distance * nonzero, tries), device=data.device)
        left = torch.minimum(distance, (1 - data @ data[drawn].T).clamp(min=0).T)
        best = int(left.sum(1).argmin())
        seeds.append(int(drawn[best]))
        distance = left[best]
    return data[seeds]


def _draw(weight: Tensor, count: int) -> list[int]:
    """``count`` rows drawn with replacement with probability proportional to ``weight``;
    uniformly when every weight is zero (all rows zero, or all on the seeds already)."""
    if not bool(weight.sum() > 0):
        weight = torch.ones_like(weight)
    return torch.multinomial(weight, count, replacement=True).tolist()


def cluster_labels(x: Tensor, clusters: int) -> Tensor:
    """Spherical k-means labels of the rows of ``x`` (20 iterations): FAISS's ``Kmeans``
    where faiss loads, with its seed drawn from torch's global generator, else
    :func:`spherical_kmeans`; seeded runs repeat either way."""
    faiss = load_faiss()
    if faiss is None:
        return spherical_kmeans(x, clusters)
    check_features(x)
    integer(1, x.size(0))(clusters, "clusters")
    data = F.normalize(x.detach().float(), dim=1).cpu().numpy()
    seed = int(torch.randint(2**31 - 1, ()))
    kmeans = faiss.Kmeans(data.shape[1], clusters, niter=ITERATIONS, spherical=True, seed=seed)
    kmeans.train(data)
    _, labels = kmeans.index.search(data, 1)
    return torch.from_numpy(labels[:, 0]).to(x.device)
