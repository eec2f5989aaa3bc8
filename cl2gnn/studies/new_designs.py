"""The message-passing paper's two designs in feature space.

* Attention alignment against wrong positives: an augmentation graph whose edges include
  cross-class pairs; AttentionAlignConv down-weights them as the classes drift apart, so
  the attention-contrastive dynamics separate the classes better than the plain ones.
* Multi-stage memory against collapse: alignment alone collapses the features; pulling
  towards neighbors' multi-stage (JK-mean) features instead of their current ones slows
  the collapse.
"""

from __future__ import annotations

from pathlib import Path

import torch

from cl2gnn.graphs import knn_graph
from cl2gnn.nn import AlignConv, AttentionAlignConv, MultiStageMemory, UniformAttention

from .common import StudyResult, new_figure, save_figure, separation

NAME = "new-designs"


def noisy_graph(labels: torch.Tensor, points: torch.Tensor, wrong: float, gen) -> torch.Tensor:
    """kNN edges inside each class plus a fraction ``wrong`` of random cross-class edges."""
    edges = []
    for k in labels.unique():
        members = torch.nonzero(labels == k).view(-1)
        local = knn_graph(points[members], k=5, backend="torch", symmetrize="union")
        edges.append(members[local])
    right = torch.cat(edges, dim=1)
    count = int(wrong * right.size(1) / (1 - wrong)) // 2
    a = torch.nonzero(labels == 0).view(-1)
    b = torch.nonzero(labels == 1).view(-1)
    src = a[torch.randint(len(a), (count,), generator=gen)]
    dst = b[torch.randint(len(b), (count,), generator=gen)]
    cross = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    return torch.cat([right, cross], dim=1)


def attention_study(steps: int, seed: int, n_per_class: int, result: StudyResult, ax) -> None:
    gen = torch.Generator().manual_seed(seed)
    labels = torch.arange(2).repeat_interleave(n_per_class)
    points = torch.randn(2 * n_per_class, 2, generator=gen, dtype=torch.float64)
    points[:, 0] += 2.0 * labels - 1.0  # the inputs that define the right edges
    edge_index = noisy_graph(labels, points, wrong=0.3, gen=gen)
    cross = labels[edge_index[0]] != labels[edge_index[1]]
    init = torch.nn.functional.normalize(points, dim=1)
    tau, step = 0.5, 0.02
    uniform = UniformAttention(step=step, temperature=tau)
    plain_align = AlignConv(step=step / tau)
    attn_align = AttentionAlignConv(step=step / tau, beta=5.0)
    runs = {"plain": init.clone(), "attention": init.clone()}
    curves = {name: [] for name in runs}
    for _ in range(steps):
        for name, x in runs.items():
            aligned = plain_align(x, edge_index) if name == "plain" else attn_align(x, edge_index)
            x = torch.nn.functional.normalize(aligned + uniform(x) - x, dim=1)
            runs[name] = x
            curves[name].append(separation(x, labels))
    coef = attn_align.attention(runs["attention"], edge_index)
    result.metrics["attention_wrong_edge_fraction"] = float(cross.float().mean())
    result.metrics["attention_weight_wrong_edges"] = float(coef[cross].mean())
    result.metrics["attention_weight_right_edges"] = float(coef[~cross].mean())
    result.metrics["plain_separation_final"] = curves["plain"][-1]
    result.metrics["attention_separation_final"] = curves["attention"][-1]
    result.curves["attention_study"] = curves
    for name, curve in curves.items():
        ax.plot(curve, label=f"{name} alignment")
    ax.set_title(f"wrong positives ({cross.float().mean():.0%} of edges)")
    ax.set_xlabel("step")
    ax.set_ylabel("inter / intra class distance")
    ax.legend()


def memory_study(steps: int, seed: int, n: int, result: StudyResult, ax) -> None:
    gen = torch.Generator().manual_seed(seed)
    points = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    edge_index = knn_graph(points, k=8, backend="torch", symmetrize="union")
    ids = torch.arange(n)
    step = 0.1
    align = AlignConv(step=step)
    # name -> memory (None: plain alignment on the current features)
    memories = {"alignment": None}
    memories.update(
        {
            f"multi-stage (s={s})": MultiStageMemory(n, 2, stages=s, dtype=torch.float64)
            for s in (4, 16)
        }
    )
    runs = {name: points.clone() for name in memories}
    spread = {name: [] for name in runs}
    for _ in range(steps):
        for name, memory in memories.items():
            x = runs[name]
            target = x
            if memory is not None:  # neighbors' multi-stage features: JK mean of stages
                target = memory.aggregate_stages(x, ids)
                memory.push(x, ids)
                memory.next_stage()
            # AlignConv(target) - (1 - 2α) target = 2α Ā_sym target
            runs[name] = (1 - 2 * step) * x + align(target, edge_index) - (1 - 2 * step) * target
            spread[name].append(float(runs[name].std(dim=0).norm()))
    initial = float(points.std(dim=0).norm())
    for name, curve in spread.items():
        result.metrics[f"memory_{name}_spread_final"] = curve[-1] / initial
        ax.semilogy(curve, label=name)
    result.curves["memory_study"] = spread
    ax.set_title("alignment alone: collapse")
    ax.set_xlabel("step")
    ax.set_ylabel("feature spread (std norm)")
    ax.legend()


def run(out: Path, steps: int = 300, seed: int = 0, n_per_class: int = 100) -> StudyResult:
    result = StudyResult(NAME)
    fig, axes = new_figure("New designs in feature space", ncols=2)
    attention_study(steps, seed, n_per_class, result, axes[0])
    memory_study(steps, seed, 2 * n_per_class, result, axes[1])
    save_figure(fig, out, NAME, result)
    return result
