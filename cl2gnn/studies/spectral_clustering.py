"""InfoNCE as spectral clustering (Kernel-InfoNCE paper, App. C): 2-D InfoNCE embeddings of
an SBM similarity graph recover its clusters like spectral clustering of the graph does."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from torch_geometric.utils import to_scipy_sparse_matrix

from cl2gnn.datasets import sbm_graph
from cl2gnn.losses import InfoNCELoss

from .common import StudyResult, new_figure, save_figure

NAME = "spectral-clustering"
SETTINGS = {"p=1, q=0": (1.0, 0.0), "p=0.75, q=0.2": (0.75, 0.2)}


class EdgeSampler:
    """One uniformly sampled out-neighbor per anchor (the 'one sampled edge' of the study)."""

    def __init__(self, edge_index: torch.Tensor, n: int) -> None:
        order = torch.argsort(edge_index[0], stable=True)
        self.targets = edge_index[1, order]
        self.degree = torch.bincount(edge_index[0], minlength=n)
        self.start = torch.cumsum(self.degree, 0) - self.degree

    def __call__(self, anchors: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        pick = (torch.rand(len(anchors), generator=gen) * self.degree[anchors]).long()
        return self.targets[self.start[anchors] + pick]


def cluster_scores(labels: np.ndarray, found: np.ndarray) -> dict:
    return {
        "nmi": float(normalized_mutual_info_score(labels, found)),
        "ari": float(adjusted_rand_score(labels, found)),
    }


def run(
    out: Path, steps: int = 3000, seed: int = 0, clusters: int = 6, per_cluster: int = 100
) -> StudyResult:
    result = StudyResult(NAME)
    fig, axes = new_figure("InfoNCE embeddings of SBM graphs (2-D, τ = 0.5)", ncols=2)
    for ax, (title, (p, q)) in zip(axes, SETTINGS.items(), strict=True):
        edge_index, labels = sbm_graph([per_cluster] * clusters, p, q, seed=seed)
        n = labels.numel()
        gen = torch.Generator().manual_seed(seed)
        emb = torch.randn(n, 2, generator=gen, dtype=torch.float64).requires_grad_(True)
        optimizer = torch.optim.SGD([emb], lr=1.0)
        loss_fn = InfoNCELoss(temperature=0.5)
        sampler = EdgeSampler(edge_index, n)
        losses = []
        for _ in range(steps):
            anchors = torch.randperm(n, generator=gen)[:50]
            loss = loss_fn(emb[anchors], emb[sampler(anchors, gen)])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        z = torch.nn.functional.normalize(emb.detach(), dim=1).numpy()
        found = KMeans(clusters, n_init=10, random_state=seed).fit_predict(z)
        adjacency = to_scipy_sparse_matrix(edge_index, num_nodes=n).tocsr()
        with warnings.catch_warnings():  # the clean SBM (q = 0) is disconnected on purpose
            warnings.filterwarnings("ignore", "Graph is not fully connected", UserWarning)
            spectral = SpectralClustering(
                clusters, affinity="precomputed", random_state=seed
            ).fit_predict(adjacency)
        truth = labels.numpy()
        key = f"p{p}_q{q}"
        result.metrics[f"{key}_infonce"] = cluster_scores(truth, found)
        result.metrics[f"{key}_spectral"] = cluster_scores(truth, spectral)
        result.curves[f"{key}_loss"] = losses[:: max(1, steps // 200)]
        ax.scatter(z[:, 0], z[:, 1], c=truth, cmap="tab10", s=6)
        nmi = result.metrics[f"{key}_infonce"]["nmi"]
        ax.set_title(f"{title}: k-means NMI {nmi:.2f}")
        ax.set_xlabel("embedding 1")
        ax.set_ylabel("embedding 2")
        ax.set_aspect("equal")
    save_figure(fig, out, NAME, result)
    return result
