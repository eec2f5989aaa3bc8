"""One training loop for both trainers (epochs with timing and a progress bar, embedding
snapshots) and :func:`train_run`, which chooses the trainer for a resolved configuration."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from torch import Tensor
from torch_geometric.data import Data
from tqdm.auto import tqdm

from .._validation import check_integer
from ..distributed import rank_and_world
from .checkpoint import resume_run, run_checkpoint, run_identity, write_checkpoint
from .config import NodeConfig
from .fullbatch import FullBatchTrainer
from .minibatch import MinibatchTrainer
from .result import TrainResult
from .trainer import Trainer


def fit(
    trainer: Trainer,
    progress: bool = True,
    snapshot_every: int = 0,
    description: str = "",
    *,
    resume: str | Path | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 0,
) -> TrainResult:
    """Train ``trainer`` for ``config.epochs`` epochs and embed every node;
    ``snapshot_every > 0`` also keeps the embeddings after every that many epochs. The first
    epoch's time (one-off costs) is left out of ``epoch_ms`` when there are others.

    ``resume``: continue the run saved there (a ``seed_<k>`` folder, or its
    ``checkpoint.pt``: :func:`~cl2gnn.node.checkpoint.resume_run`) from its epoch, with its
    losses. ``checkpoint_every > 0`` writes the run's state to ``checkpoint`` (a folder) as
    ``checkpoint.pt`` after every that many epochs, so that an interrupted run resumes."""
    config = trainer.config
    check_integer(snapshot_every, "snapshot_every", 0)
    check_integer(checkpoint_every, "checkpoint_every", 0)
    if checkpoint_every and checkpoint is None:
        raise ValueError("checkpoint_every needs checkpoint, the folder to write it to")
    single = rank_and_world()[1] == 1  # under a process group each rank's draws are its own
    if not single and (resume is not None or checkpoint_every):
        raise ValueError("resume and checkpoint_every: a run of one process only")
    identity = run_identity(trainer) if single else None
    losses = [] if resume is None else resume_run(trainer, resume, identity)
    seconds, snapshots = [], {}
    bar = tqdm(
        range(len(losses), config.epochs),
        desc=description or trainer.label,
        disable=not progress,
        initial=len(losses),
        total=config.epochs,
    )
    for epoch in bar:
        start = time.perf_counter()
        losses.append(trainer.epoch())
        seconds.append(time.perf_counter() - start)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if snapshot_every and (epoch + 1) % snapshot_every == 0:
            snapshots[epoch + 1] = trainer.embed()
        if checkpoint_every and (epoch + 1) % checkpoint_every == 0:
            write_checkpoint(checkpoint, run_checkpoint(trainer, losses, identity))
    # before embedding: what continues the run
    state = run_checkpoint(trainer, losses, identity) if single else None
    warm = seconds[1:] if len(seconds) > 1 else seconds
    epoch_ms = 1000.0 * float(np.mean(warm)) if warm else 0.0  # no epoch run: the encoder as it is
    final = snapshots[config.epochs] if config.epochs in snapshots else trainer.embed()
    encoder = trainer.method.embedding_model(trainer.encoder).eval()
    return TrainResult(
        final,
        losses,
        epoch_ms,
        snapshots,
        encoder=encoder,
        method=trainer.method,
        config=config,
        checkpoint=state,
    )


def train_run(
    data: Data,
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
    config: NodeConfig,
    *,
    seed: int = 0,
    progress: bool = True,
    snapshot_every: int = 0,
    resume: str | Path | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 0,
    **options,
) -> TrainResult:
    """A run of :func:`~cl2gnn.node.train_node_model` once its ``config`` is resolved, for a
    registered method or a callable objective (not ``"auto"``): the trainer ``config`` calls
    for, built with ``seed`` and ``options`` (the trainers' ``encoder``, ``augment``,
    ``device``), trained by :func:`fit` (``resume``, ``checkpoint``, ``checkpoint_every``)."""
    trainer_class = FullBatchTrainer if config.batch_size is None else MinibatchTrainer
    trainer = trainer_class(data, method, config, seed=seed, **options)
    result = fit(
        trainer,
        progress,
        snapshot_every,
        f"{trainer.label} seed {seed}",
        resume=resume,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
    )
    result.seed = seed
    return result
