"""Oversmoothing on a real graph: iterated alignment steps (``AlignConv`` at ``α = ½``,
i.e. GCN propagation ``Ā x``) collapse a graph's node features, the Dirichlet energy going
to 0 (the seed paper's §3.1); the same steps each followed by ``ContrastiveNorm`` (the
uniformity step plus LayerNorm, ContraNorm) do not. Fig. 1 of the seed paper, on a graph.

The features are Cora's bag-of-words rows projected on their top principal directions
(``dim``), so that the complete-graph attention stays cheap; the measures are scale-free:
the Dirichlet energy over the squared norm, ``tr(xᵀ L x) / ‖x‖²_F`` (``AlignConv.energy``,
``L = I - D^-½AD^-½``), and the effective rank of ``x`` (exp of the entropy of its
normalised singular values)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch_geometric.utils import add_self_loops

from cl2gnn.datasets import load_node_dataset
from cl2gnn.nn import AlignConv, ContrastiveNorm

from .common import StudyResult, new_figure, save_figure

NAME = "oversmoothing"


def dirichlet_ratio(x: torch.Tensor, edge_index: torch.Tensor) -> float:
    return float(AlignConv().energy(x, edge_index) / (x * x).sum())


def effective_rank(x: torch.Tensor) -> float:
    s = torch.linalg.svdvals(x)
    p = s / s.sum()
    return float(torch.exp(-(p * torch.log(p.clamp_min(1e-300))).sum()))


def run(
    out: Path, steps: int = 64, seed: int = 0, dataset: str = "Cora", dim: int = 32
) -> StudyResult:
    data = load_node_dataset(dataset)
    # GCN's propagation D̃^-½(A + I)D̃^-½: with self loops no eigenvalue is -1, so bipartite
    # components (Cora has many) converge instead of oscillating
    edge_index = add_self_loops(data.edge_index, num_nodes=data.num_nodes)[0]
    torch.manual_seed(seed)  # pca_lowrank's random start
    features = data.x.double() - data.x.double().mean(0)
    _, _, directions = torch.pca_lowrank(features, q=dim, center=False)
    init = features @ directions
    align = AlignConv(step=0.5)
    norm = ContrastiveNorm(dim, step=1.0, temperature=1.0).double()
    updates = {
        "AlignConv": lambda x: align(x, edge_index),
        "AlignConv + ContrastiveNorm": lambda x: norm(align(x, edge_index)),
    }
    result = StudyResult(NAME)
    for name, update in updates.items():
        x, energy, rank = init, [], []
        with torch.no_grad():
            for t in range(steps + 1):
                energy.append(dirichlet_ratio(x, edge_index))
                rank.append(effective_rank(x))
                if t < steps:
                    x = update(x)
        result.curves[name] = {"dirichlet": energy, "effective_rank": rank}
        key = "align" if name == "AlignConv" else "align_norm"
        result.metrics[f"{key}_dirichlet_final"] = energy[-1]
        result.metrics[f"{key}_effective_rank_final"] = rank[-1]
    result.metrics["dirichlet_initial"] = result.curves["AlignConv"]["dirichlet"][0]
    result.metrics["effective_rank_initial"] = result.curves["AlignConv"]["effective_rank"][0]
    result.metrics["nodes"] = int(data.num_nodes)
    result.metrics["dim"] = dim

    fig, axes = new_figure(f"Oversmoothing on {dataset} ({dim} principal directions)", ncols=2)
    for name, curve in result.curves.items():
        axes[0].plot(curve["dirichlet"], label=name)
        axes[1].plot(curve["effective_rank"], label=name)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("Dirichlet energy / ‖x‖²")
    axes[1].set_ylabel("effective rank")
    for ax in axes:
        ax.set_xlabel("layer (step)")
        ax.legend()
    save_figure(fig, out, NAME, result)
    return result
