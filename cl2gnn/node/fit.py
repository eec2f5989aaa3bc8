"""One training loop for both trainers (epochs with timing and a progress bar, embedding
snapshots) and :func:`train_run`, which chooses the trainer for a resolved configuration."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
from torch import Tensor
from torch_geometric.data import Data
from tqdm.auto import tqdm

from .._validation import check_integer
from .config import NodeConfig
from .fullbatch import FullBatchTrainer
from .minibatch import MinibatchTrainer
from .result import TrainResult
from .trainer import Trainer

LOG_SECONDS = 1.0  # the losses are read back from the device at most this often


def fit(
    trainer: Trainer, progress: bool = True, snapshot_every: int = 0, description: str = ""
) -> TrainResult:
    """Train ``trainer`` for ``config.epochs`` epochs and embed every node;
    ``snapshot_every > 0`` also keeps the embeddings after every that many epochs.

    The epochs' losses stay on the device and are read back once per log interval (after
    the first epoch, then every :data:`LOG_SECONDS`, and after the last), so that no epoch
    waits for the device; a non-finite loss stops the run there with a ``ValueError``
    naming its epoch. ``epoch_ms`` is the time from the first read-back to the last per epoch
    (the first epoch's one-off costs left out when there are others), snapshots left out."""
    config = trainer.config
    check_integer(snapshot_every, "snapshot_every", 0)
    losses, pending, snapshots = [], [], {}
    bar = tqdm(range(config.epochs), desc=description or trainer.label, disable=not progress)
    first = later = 0.0  # seconds of training: the first epoch, the others
    mark = time.perf_counter()  # the last read-back (or snapshot): what is timed starts here
    for epoch in bar:
        pending.append(trainer.epoch())
        snapshot = snapshot_every and (epoch + 1) % snapshot_every == 0
        last = epoch + 1 == config.epochs
        if epoch == 0 or last or snapshot or time.perf_counter() - mark >= LOG_SECONDS:
            losses += read_back(pending, len(losses))
            pending, now = [], time.perf_counter()
            first, later = (now - mark, later) if epoch == 0 else (first, later + now - mark)
            mark = now
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if snapshot:
            snapshots[epoch + 1] = trainer.embed()
            mark = time.perf_counter()
    # the first epoch's one-off costs left out, unless it is the only one (epochs=0: untrained)
    epoch_ms = 1000.0 * (later / (config.epochs - 1) if config.epochs > 1 else first)
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


def read_back(pending: list[Tensor | float], done: int) -> list[float]:
    """The losses of the epochs after the first ``done``, read back from the device in one
    transfer; ``ValueError`` naming the first epoch (from 1) whose loss is not
    finite."""
    if not pending:
        return []
    values = torch.stack([torch.as_tensor(v, dtype=torch.float64) for v in pending]).tolist()
    for offset, value in enumerate(values):
        if not math.isfinite(value):
            raise ValueError(
                f"the loss of epoch {done + offset + 1} is {value}: training diverged (lower "
                "the learning rate, or check the inputs and the method's options)"
            )
    return values


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
