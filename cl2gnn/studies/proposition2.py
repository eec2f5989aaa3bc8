"""Proposition 2: on each class subgraph, alignment contracts the distance to the span of
``D^{1/2} 1`` by at most ``max(|1 - 2αλ_2|, |1 - 2αλ_max|)`` per step; a disconnected class
graph (``λ_2 = 0``) is not contracted to one direction."""

from __future__ import annotations

from pathlib import Path

import torch

from cl2gnn.datasets import sbm_graph
from cl2gnn.graphs import class_spectra
from cl2gnn.nn import AlignConv

from .common import StudyResult, new_figure, save_figure

NAME = "proposition2"


def subspace_distance(x: torch.Tensor, degree: torch.Tensor) -> float:
    """Distance of ``x`` (one class) to the null space of its normalised Laplacian."""
    u = degree.sqrt()
    u = u / u.norm()
    return float((x - u[:, None] * (u @ x)[None, :]).norm())


def run(out: Path, steps: int = 200, seed: int = 0, n_per_class: int = 60) -> StudyResult:
    half = n_per_class // 2
    connected, _ = sbm_graph([n_per_class], 0.15, 0.0, seed=seed)
    disconnected, _ = sbm_graph([half, n_per_class - half], 0.3, 0.0, seed=seed + 1)
    edge_index = torch.cat([connected, disconnected + n_per_class], dim=1)
    labels = torch.arange(2).repeat_interleave(n_per_class)
    names = {0: "connected class", 1: "disconnected class"}
    spectra = class_spectra(edge_index, labels)
    step = 0.2
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2 * n_per_class, 2, generator=gen, dtype=torch.float64)
    degree = torch.bincount(edge_index[1], minlength=2 * n_per_class).double()
    members = [labels == k for k in range(2)]
    dist = {k: [subspace_distance(x[m], degree[m])] for k, m in enumerate(members)}
    op = AlignConv(step)
    for _ in range(steps):
        x = op(x, edge_index)
        for k, m in enumerate(members):
            dist[k].append(subspace_distance(x[m], degree[m]))
    result = StudyResult(NAME)
    fig, axes = new_figure("Proposition 2: per-class contraction under alignment", ncols=2)
    for k, spectrum in enumerate(spectra):
        d = torch.tensor(dist[k], dtype=torch.float64)
        usable = d[:-1] > 1e-9 * d[0]  # ratios below round-off level say nothing
        ratios = (d[1:] / d[:-1])[usable]
        bound = spectrum.contraction_rate(step)
        key = names[k].split()[0]
        result.metrics[f"{key}_lambda_2"] = spectrum.lambda_2
        result.metrics[f"{key}_bound"] = bound
        result.metrics[f"{key}_max_ratio"] = float(ratios.max())
        result.metrics[f"{key}_bound_holds_every_step"] = bool((ratios <= bound * (1 + 1e-9)).all())
        result.metrics[f"{key}_final_over_initial"] = float(d[-1] / d[0])
        result.curves[key] = {"distance": dist[k], "ratio": ratios.tolist(), "bound": bound}
        axes[0].plot(ratios.numpy(), label=f"{names[k]}: ratio")
        axes[0].axhline(bound, ls="--", color=f"C{k}", label=f"{names[k]}: bound |1-2αλ|")
        axes[1].semilogy(d.numpy(), label=f"{names[k]} (λ2 = {spectrum.lambda_2:.3f})")
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("dist(t+1) / dist(t)")
    axes[0].legend(fontsize=7)
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("distance to span(D^1/2 1)")
    axes[1].legend(fontsize=7)
    save_figure(fig, out, NAME, result)
    return result
