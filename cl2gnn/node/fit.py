"""One training loop for both trainers: epochs with timing and a progress bar, stochastic
weight averaging, embedding snapshots, and :func:`train_node_model`, which chooses the
trainer."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor
from torch.optim.swa_utils import AveragedModel
from torch_geometric.data import Data
from tqdm.auto import tqdm

from .._validation import check_integer
from .config import NodeConfig
from .fullbatch import FullBatchTrainer
from .minibatch import MinibatchTrainer
from .trainer import Trainer


@dataclass
class TrainResult:
    embeddings: Tensor  # frozen encoder output on the clean graph, [N, hidden]
    losses: list[float] = field(default_factory=list)  # each epoch's mean loss
    epoch_ms: float = 0.0  # mean wall time of one training epoch
    snapshots: dict[int, Tensor] = field(default_factory=dict)  # epoch -> embeddings


def fit(
    trainer: Trainer, progress: bool = True, snapshot_every: int = 0, description: str = ""
) -> TrainResult:
    """Train ``trainer`` for ``config.epochs`` epochs and embed every node. From epoch
    ``config.swa_start`` on the embeddings come from the running mean of the encoder's
    weights (stochastic weight averaging); ``snapshot_every > 0`` also keeps the embeddings
    after every that many epochs. The first epoch's time (one-off costs) is left out of
    ``epoch_ms`` when there are others."""
    config = trainer.config
    if snapshot_every < 0:
        raise ValueError(f"snapshot_every must be >= 0, got {snapshot_every}")
    if config.swa_start is not None:
        check_integer(config.swa_start, "swa_start", 1, config.epochs)
    averaged = AveragedModel(trainer.encoder) if config.swa_start is not None else None

    def embed() -> Tensor:
        use_mean = averaged is not None and averaged.n_averaged
        return trainer.embed(averaged.module if use_mean else None)

    losses, seconds, snapshots = [], [], {}
    bar = tqdm(range(config.epochs), desc=description or trainer.label, disable=not progress)
    for epoch in bar:
        start = time.perf_counter()
        losses.append(trainer.epoch())
        seconds.append(time.perf_counter() - start)
        if averaged is not None and epoch + 1 >= config.swa_start:
            averaged.update_parameters(trainer.encoder)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if snapshot_every and (epoch + 1) % snapshot_every == 0:
            snapshots[epoch + 1] = embed()
    warm = seconds[1:] if len(seconds) > 1 else seconds
    epoch_ms = 1000.0 * float(np.mean(warm)) if warm else 0.0  # epochs=0: the untrained encoder
    final = snapshots[config.epochs] if config.epochs in snapshots else embed()
    return TrainResult(final, losses, epoch_ms, snapshots)


def train_node_model(
    data: Data,
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
    config: NodeConfig,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = True,
    snapshot_every: int = 0,
) -> TrainResult:
    """Train an encoder on ``data`` with ``method`` — a name of
    :data:`~cl2gnn.node.methods.REGISTRY`, or any callable ``(z1, z2, h1, h2) -> loss`` of
    the projections and encoder outputs on GRACE's scheme — and return the frozen
    embeddings. With ``config.epochs == 0`` they are the encoder's at its seeded
    initialisation (a baseline).

    Full-batch (:class:`~cl2gnn.node.fullbatch.FullBatchTrainer`) by default;
    ``config.batch_size`` trains on mini-batches of seed nodes and their sampled
    neighbourhoods (:class:`~cl2gnn.node.minibatch.MinibatchTrainer`), in one process or,
    under ``torchrun``, across the process group. See :func:`fit` for ``snapshot_every``."""
    trainer_class = FullBatchTrainer if config.batch_size is None else MinibatchTrainer
    trainer = trainer_class(data, method, config, seed, device)
    return fit(trainer, progress, snapshot_every, f"{trainer.label} seed {seed}")
