"""Train with several seeds and evaluate every requested protocol on the same embeddings."""

from __future__ import annotations

import resource
import sys

import numpy as np
import torch
from tqdm.auto import tqdm

from .config import default_config
from .datasets import load_node_dataset
from .evaluate import make_split, probe_accuracy
from .train import train_node_model


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def run_node(
    dataset: str,
    method: str = "grace",
    protocols: tuple[str, ...] = ("grace",),
    seeds: int = 10,
    epochs: int | None = None,
    root: str | None = None,
    device: str = "cpu",
    progress: bool = True,
    encoder: str | None = None,
    embedding: str | None = None,
    hidden: int | None = None,
    **overrides,
) -> list[dict]:
    """One result dict per protocol: accuracies in percent, mean ± std over the seeds.
    ``hidden`` sets the encoder and head widths; ``overrides`` are further
    :class:`NodeConfig` fields (``None`` keeps the dataset's default)."""
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    data = load_node_dataset(dataset, root)
    changes = {"epochs": epochs, "encoder": encoder, "embedding": embedding, "hidden": hidden}
    changes = {"proj_hidden": hidden, **changes, **overrides}
    config = default_config(data.name).with_overrides(**changes)
    scores = {p: [] for p in protocols}
    epoch_ms, final_losses = [], []
    for seed in tqdm(range(seeds), desc=f"{data.name} {method}", disable=not progress):
        result = train_node_model(data, method, config, seed, device, progress=False)
        epoch_ms.append(result.epoch_ms)
        final_losses.append(result.losses[-1])
        for protocol in protocols:
            split = make_split(protocol, data, seed)
            scores[protocol].append(probe_accuracy(result.embeddings, data.y, split, seed))
    device_name = torch.cuda.get_device_name() if str(device).startswith("cuda") else "cpu"
    return [
        {
            "dataset": data.name,
            "method": method,
            "protocol": protocol,
            "accuracy_mean": float(np.mean(acc)),
            "accuracy_std": float(np.std(acc)),
            "accuracies": acc,
            "seeds": seeds,
            "epoch_ms": float(np.mean(epoch_ms)),
            "epochs": config.epochs,
            "final_loss": float(np.mean(final_losses)),
            "peak_rss_mb": peak_rss_mb(),
            "device": device_name,
            "config": config.as_dict(),
        }
        for protocol, acc in scores.items()
    ]


def format_table(results: list[dict]) -> str:
    header = (
        f"{'dataset':12s} {'method':12s} {'protocol':8s} {'accuracy (%)':>16s} "
        f"{'seeds':>5s} {'ms/epoch':>9s}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        acc = f"{r['accuracy_mean']:.2f} ± {r['accuracy_std']:.2f}"
        lines.append(
            f"{r['dataset']:12s} {r['method']:12s} {r['protocol']:8s} {acc:>16s} "
            f"{r['seeds']:>5d} {r['epoch_ms']:>9.1f}"
        )
    return "\n".join(lines)
