"""Fig. 1 of the message-passing paper: alignment collapses, uniformity spreads, and their
difference (contrastive) separates two classes, all on an ε-ball augmentation graph."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from cl2gnn.graphs import radius_graph
from cl2gnn.nn import AlignConv, ContrastiveConv, UniformAttention

from .common import StudyResult, class_distances, new_figure, save_figure, separation

NAME = "message-passing"


def two_gaussians(n_per_class: int, variance: float, generator: torch.Generator):
    means = torch.tensor([[-1.0, 0.0], [1.0, 0.0]])
    labels = torch.arange(2).repeat_interleave(n_per_class)
    noise = torch.randn(2 * n_per_class, 2, generator=generator, dtype=torch.float64)
    return means.double()[labels] + math.sqrt(variance) * noise, labels


def run(out: Path, steps: int = 1000, seed: int = 0, n_per_class: int = 100) -> StudyResult:
    gen = torch.Generator().manual_seed(seed)
    points, labels = two_gaussians(n_per_class, 0.7, gen)
    graph = radius_graph(points, 0.4)
    init = torch.rand(len(points), 2, generator=gen, dtype=torch.float64) * 2 - 1
    step = 0.1
    align, uniform = AlignConv(step), UniformAttention(step, temperature=1.0)
    contrastive = ContrastiveConv(step, temperature=1.0)
    updates = {
        "alignment": lambda x: align(x, graph),
        "uniformity": uniform,
        "contrastive": lambda x: contrastive(x, graph),
    }
    result = StudyResult(NAME)
    finals = {}
    for name, update in updates.items():
        x, intra, inter = init.clone(), [], []
        for t in range(steps + 1):
            if t % max(1, steps // 100) == 0 or t == steps:
                a, b = class_distances(x, labels)
                intra.append(a)
                inter.append(b)
            if t < steps:
                x = update(x)
        finals[name] = x
        result.curves[name] = {"intra": intra, "inter": inter}
        result.metrics[f"{name}_intra_final"] = intra[-1]
        result.metrics[f"{name}_inter_final"] = inter[-1]
        result.metrics[f"{name}_separation"] = separation(x, labels)
    result.metrics["initial_separation"] = separation(init, labels)
    result.metrics["graph_edges"] = int(graph.size(1))

    fig, axes = new_figure("Message-passing view of CL dynamics (ε = 0.4 graph)", ncols=4, width=4)
    axes[0].scatter(*init.T, c=labels, cmap="coolwarm", s=8)
    axes[0].set_title("initial features")
    for ax, (name, x) in zip(axes[1:], finals.items(), strict=True):
        ax.scatter(*x.T, c=labels, cmap="coolwarm", s=8)
        ax.set_title(f"{name}, {steps} steps")
    for ax in axes:
        ax.set_xlabel("feature 1")
        ax.set_ylabel("feature 2")
    save_figure(fig, out, f"{NAME}-features", result)

    fig, axes = new_figure("Class distances over training", ncols=3, width=4)
    for ax, (name, curve) in zip(axes, result.curves.items(), strict=True):
        ticks = torch.linspace(0, steps, len(curve["intra"])).tolist()
        ax.plot(ticks, curve["intra"], label="intra-class")
        ax.plot(ticks, curve["inter"], label="inter-class")
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.set_ylabel("mean distance")
        ax.set_yscale("log")
        ax.legend()
    save_figure(fig, out, f"{NAME}-distances", result)
    return result
