"""The neural kernel (Calder & Lee): trained through a network, NT-Xent keeps the input's
cluster structure for many iterations, while free features forget it and spread uniformly
on the circle; and the NT-Xent value of K evenly spaced points on S¹ against K and τ."""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F

from cl2gnn.losses import GeneralizedNTXentLoss, InfoNCELoss

from .common import StudyResult, new_figure, save_figure

NAME = "neural-kernel"
CENTERS = (-3.0, -1.0, 1.0, 3.0)


def angular_separation(z: torch.Tensor, labels: torch.Tensor) -> float:
    """Mean between-cluster over mean within-cluster angular distance on S¹ (1 = none)."""
    angle = torch.atan2(z[:, 1], z[:, 0])
    diff = (angle[:, None] - angle[None, :]).abs()
    diff = torch.minimum(diff, 2 * math.pi - diff)
    same = labels[:, None] == labels[None, :]
    off = ~torch.eye(len(z), dtype=torch.bool)
    return float(diff[~same].mean() / diff[same & off].mean().clamp(min=1e-12))


def circle_uniformity_gap(z: torch.Tensor) -> float:
    """Largest gap between consecutive angles over the uniform gap 2π/n (1 = even spread)."""
    angle, _ = torch.sort(torch.atan2(z[:, 1], z[:, 0]))
    gaps = torch.diff(torch.cat([angle, angle[:1] + 2 * math.pi]))
    return float(gaps.max() / (2 * math.pi / len(z)))


def evenly_spaced_loss(k: int, tau: float) -> float:
    """NT-Xent in its expectation form, ``Ψ(s) = log(1 + s / #negatives)`` (the generalised
    NT-Xent's ``E_y``), of K evenly spaced unit vectors whose two views coincide; the sum
    form differs by the K-dependent ``log`` of the number of negatives."""
    theta = torch.arange(k, dtype=torch.float64) * 2 * math.pi / k
    z = torch.stack([theta.cos(), theta.sin()], dim=1)
    negatives = 2 * k - 2
    loss = GeneralizedNTXentLoss(tau, psi=lambda s: torch.log1p(s / negatives))
    return float(loss(z, z))


def run(out: Path, steps: int = 1500, seed: int = 0, per_cluster: int = 50) -> StudyResult:
    gen = torch.Generator().manual_seed(seed)
    labels = torch.arange(len(CENTERS)).repeat_interleave(per_cluster)
    points = torch.zeros(len(labels), 2, dtype=torch.float64)
    points[:, 0] = torch.tensor(CENTERS, dtype=torch.float64)[labels]
    points += 0.1 * torch.randn(points.shape, generator=gen, dtype=torch.float64)
    torch.manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Linear(2, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2)
    ).double()
    free = F.normalize(net(points).detach(), dim=1).clone().requires_grad_(True)
    loss_fn = InfoNCELoss(temperature=0.5)
    net_opt = torch.optim.SGD(net.parameters(), lr=0.05)
    free_opt = torch.optim.SGD([free], lr=0.05 * len(points))  # per-sample rate as the net's
    curves = {"network": [], "free": [], "network_gap": [], "free_gap": []}
    every = max(1, steps // 100)
    for t in range(steps + 1):
        if t % every == 0 or t == steps:
            with torch.no_grad():
                z_net = F.normalize(net(points), dim=1)
                z_free = F.normalize(free, dim=1)
            curves["network"].append(angular_separation(z_net, labels))
            curves["free"].append(angular_separation(z_free, labels))
            curves["network_gap"].append(circle_uniformity_gap(z_net))
            curves["free_gap"].append(circle_uniformity_gap(z_free))
        if t == steps:
            break
        noise = 0.1 * torch.randn((2, *points.shape), generator=gen, dtype=torch.float64)
        loss = loss_fn(net(points + noise[0]), net(points + noise[1]))
        net_opt.zero_grad()
        loss.backward()
        net_opt.step()
        loss = loss_fn(free, free)  # free features: the two views are one variable
        free_opt.zero_grad()
        loss.backward()
        free_opt.step()
    result = StudyResult(NAME)
    result.curves.update(curves)
    result.metrics = {
        "initial_separation": curves["network"][0],
        "network_separation_final": curves["network"][-1],
        "free_separation_final": curves["free"][-1],
        "network_max_gap_final": curves["network_gap"][-1],
        "free_max_gap_final": curves["free_gap"][-1],
    }
    ks = list(range(2, 41))
    taus = (0.05, 0.1, 0.2, 0.5, 1.0)
    table = {str(tau): [evenly_spaced_loss(k, tau) for k in ks] for tau in taus}
    result.curves["evenly_spaced"] = {"k": ks, "loss": table}
    # the loss grows with K; how many evenly spaced clusters fit before it reaches half its
    # K = 40 value scales like 1/τ
    result.metrics["evenly_spaced_k_at_half_loss"] = {
        tau: next(k for k, v in zip(ks, values, strict=True) if v >= 0.5 * values[-1])
        for tau, values in table.items()
    }

    fig, axes = new_figure("Neural kernel: network vs free features (NT-Xent, τ = 0.5)", 3, 4.2)
    ticks = [min(i * every, steps) for i in range(len(curves["network"]))]
    axes[0].plot(ticks, curves["network"], label="network features")
    axes[0].plot(ticks, curves["free"], label="free features")
    axes[0].set_xlabel("iteration")
    axes[0].set_ylabel("between / within cluster angle")
    axes[0].legend()
    with torch.no_grad():
        z_net, z_free = F.normalize(net(points), dim=1), F.normalize(free, dim=1)
    axes[1].scatter(*z_net.T, c=labels, cmap="tab10", s=10, label="network")
    axes[1].scatter(*(1.15 * z_free).T, c=labels, cmap="tab10", s=10, marker="x", label="free")
    axes[1].set_title("final embeddings (x: free, outer ring)")
    axes[1].set_aspect("equal")
    axes[1].legend(fontsize=7)
    for tau, values in table.items():
        axes[2].plot(ks, values, label=f"τ = {tau}")
    axes[2].set_xlabel("K evenly spaced points on S¹")
    axes[2].set_ylabel("NT-Xent (expectation form)")
    axes[2].legend()
    save_figure(fig, out, NAME, result)
    return result
