"""One training loop for both trainers (epochs with timing and a progress bar, embedding
snapshots) and :func:`train_run`, which chooses the trainer for a resolved configuration."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from torch import Tensor
from torch_geometric.data import Data
from tqdm.auto import tqdm

from .._validation import check_integer
from .config import NodeConfig
from .fullbatch import FullBatchTrainer
from .minibatch import MinibatchTrainer
from .result import TrainResult
from .trainer import Trainer


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
    config: NodeConfig,
    *,
    seed: int = 0,
    progress: bool = True,
    snapshot_every: int = 0,
    **options,
) -> TrainResult:
    """A run of :func:`~cl2gnn.node.train_node_model` once its ``config`` is resolved, for a
    registered method or a callable objective (not ``"auto"``): the trainer ``config`` calls
    for, built with ``seed`` and ``options`` (the trainers' ``encoder``, ``augment``,
    ``device``), trained by :func:`fit`."""
    trainer_class = FullBatchTrainer if config.batch_size is None else MinibatchTrainer
    trainer = trainer_class(data, method, config, seed=seed, **options)
    result = fit(trainer, progress, snapshot_every, f"{trainer.label} seed {seed}")
    result.seed = seed
    return result
