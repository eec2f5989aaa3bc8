"""Shared pieces of the dynamics studies: results, metrics and figure output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt
import torch
from torch import Tensor


@dataclass
class StudyResult:
    """What a study returns: scalar metrics, curves over time, and the figures it drew."""

    name: str
    metrics: dict = field(default_factory=dict)
    curves: dict = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)

    def save(self, out: Path) -> Path:
        path = Path(out) / f"{self.name}.json"
        payload = {"study": self.name, "metrics": self.metrics, "curves": self.curves}
        path.write_text(json.dumps(payload, indent=1))
        return path


def class_distances(x: Tensor, labels: Tensor) -> tuple[float, float]:
    """Mean Euclidean distance between distinct points of the same / of different classes."""
    dist = torch.cdist(x, x)
    same = labels[:, None] == labels[None, :]
    off = ~torch.eye(len(x), dtype=torch.bool, device=x.device)
    return float(dist[same & off].mean()), float(dist[~same].mean())


def separation(x: Tensor, labels: Tensor) -> float:
    """Inter-class over intra-class mean distance (scale-free; 1 = no separation)."""
    intra, inter = class_distances(x, labels)
    return inter / max(intra, 1e-12)


def new_figure(title: str, ncols: int = 1, width: float = 5.0):
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, 4.0), squeeze=False)
    fig.suptitle(title)
    return fig, axes[0]


def save_figure(fig, out: Path, name: str, result: StudyResult) -> None:
    fig.tight_layout()
    path = Path(out) / f"{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    result.figures.append(str(path))
