"""One training loop for both trainers (epochs with timing and a progress bar, embedding
snapshots) and :func:`train_run`, which chooses the trainer."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from tqdm.auto import tqdm

from .._validation import check_integer
from .config import NodeConfig
from .defaults import default_config
from .fullbatch import FullBatchTrainer
from .minibatch import MinibatchTrainer
from .result import TrainResult
from .trainer import Trainer
from .views import View


def fit(
    trainer: Trainer, progress: bool = True, snapshot_every: int = 0, description: str = ""
) -> TrainResult:
    """Train ``trainer`` for ``config.epochs`` epochs and embed every node;
    ``snapshot_every > 0`` also keeps the embeddings after every that many epochs. The first
    epoch's time (one-off costs) is left out of ``epoch_ms`` when there are others."""
    config = trainer.config
    check_integer(snapshot_every, "snapshot_every", 0)
    losses, seconds, snapshots = [], [], {}
    bar = tqdm(range(config.epochs), desc=description or trainer.label, disable=not progress)
    for epoch in bar:
        start = time.perf_counter()
        losses.append(trainer.epoch())
        seconds.append(time.perf_counter() - start)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if snapshot_every and (epoch + 1) % snapshot_every == 0:
            snapshots[epoch + 1] = trainer.embed()
    warm = seconds[1:] if len(seconds) > 1 else seconds
    epoch_ms = 1000.0 * float(np.mean(warm)) if warm else 0.0  # epochs=0: the untrained encoder
    final = snapshots[config.epochs] if config.epochs in snapshots else trainer.embed()
    trainer.encoder.eval()
    return TrainResult(
        final,
        losses,
        epoch_ms,
        snapshots,
        encoder=trainer.encoder,
        method=trainer.method,
        config=config,
    )


def train_run(
    data: Data,
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
    config: NodeConfig | None = None,
    *,
    encoder: torch.nn.Module | None = None,
    augment: View | Sequence[View] | None = None,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = True,
    snapshot_every: int = 0,
) -> TrainResult:
    """:func:`~cl2gnn.node.train_node_model` for a registered method or a callable
    objective (not ``"auto"``), with the same arguments."""
    if config is None:
        config = default_config(data, method if isinstance(method, str) else "grace")
        if encoder is not None:
            config = config.with_overrides(normalize_features=False)
    trainer_class = FullBatchTrainer if config.batch_size is None else MinibatchTrainer
    trainer = trainer_class(
        data, method, config, encoder=encoder, augment=augment, seed=seed, device=device
    )
    result = fit(trainer, progress, snapshot_every, f"{trainer.label} seed {seed}")
    result.seed = seed
    return result
