"""One training loop for both trainers (epochs with timing and a progress bar, embedding
snapshots) and :func:`train_run`, which chooses the trainer for a resolved configuration."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from pathlib import Path

import torch
from torch import Tensor
from torch_geometric.data import Data
from tqdm.auto import tqdm

from ..._checks import integer
from ...distributed import rank_and_world
from ..config import NodeConfig
from ..inputs import check_finite_embeddings
from ..result import TrainResult
from .checkpoint import RunState, resume_run, run_checkpoint, run_identity, write_checkpoint
from .fullbatch import FullBatchTrainer
from .minibatch import MinibatchTrainer
from .plan import check_schedule
from .trainer import Trainer

LOG_SECONDS = 1.0  # the losses are read back from the device at most this often


def fit(
    trainer: Trainer,
    progress: bool = True,
    snapshot_every: int = 0,
    description: str = "",
    *,
    snapshot_at: Collection[int] = (),
    resume: str | Path | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 0,
    stop_after: int | None = None,
) -> TrainResult:
    """Train ``trainer`` for ``config.epochs`` epochs (with ``config.patience``, until the
    loss has not fallen for that many, then back to the lowest-loss weights:
    :class:`LowestLoss`) and embed every node; ``snapshot_every > 0`` also keeps the
    embeddings after every that many epochs; ``snapshot_at`` after each of those epochs
    (``0``: before training, the encoder at its initialisation), with the embedding model's
    weights then (``result.encoder_states``), from which
    :meth:`~cl2gnn.node.result.TrainResult.at_epoch` hands back the model of that epoch.

    The epochs' losses stay on the device and are read back once per log interval (after
    the first epoch, then every :data:`LOG_SECONDS`, after a checkpoint's epoch and after
    the last), so that no epoch waits for the device; a non-finite loss stops the run there
    with a ``ValueError`` naming its epoch. ``epoch_ms`` is the time from the first
    read-back to the last per epoch (the first epoch's one-off costs left out when there
    are others), snapshots and checkpoints left out.

    ``resume``: continue the run saved there (a ``seed_<k>`` folder, or its
    ``checkpoint.pt``: :func:`~cl2gnn.node.training.checkpoint.resume_run`) from its epoch, with its
    losses. ``checkpoint_every > 0`` writes the run's state to ``checkpoint`` (a folder) as
    ``checkpoint.pt`` after every that many epochs, so that an interrupted run resumes.

    ``stop_after``: stop after that many epochs of the run of ``config.epochs`` (its
    schedules unchanged), and hand back its model there (``result.epoch``): what the full
    run's :meth:`~cl2gnn.node.result.TrainResult.at_epoch` gives, without the epochs after
    it."""
    config = trainer.config
    integer(0)(snapshot_every, "snapshot_every")
    integer(0)(checkpoint_every, "checkpoint_every")
    for epoch in snapshot_at:
        integer(0, config.epochs)(epoch, "snapshot_at")
    end = (
        config.epochs if stop_after is None else integer(0, config.epochs)(stop_after, "stop_after")
    )
    world = rank_and_world()[1]
    check_schedule(
        config,
        resume=resume is not None,
        checkpoint_every=checkpoint_every,
        folder=resume is not None or checkpoint is not None,
        world=world,
    )
    single = world == 1  # under a process group each rank's draws are its own
    lowest = LowestLoss(trainer.method) if config.patience is not None else None
    # the graph's digest, a pass over its bytes, where a checkpoint is read or written now
    identity = None
    if single and (resume is not None or checkpoint_every):
        identity = run_identity(trainer)
    losses = [] if resume is None else resume_run(trainer, resume, identity)
    pending, snapshots, states, start = [], {}, {}, len(losses)

    def keep(epoch: int) -> None:
        snapshots[epoch] = trainer.embed()
        if epoch in snapshot_at:  # copies: the training goes on in place
            model = trainer.method.embedding_model()
            states[epoch] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    if start == 0 and 0 in snapshot_at:
        keep(0)
    bar = tqdm(
        range(start, end),
        desc=description or trainer.label,
        disable=not progress,
        initial=start,
        total=end,
    )
    first = later = 0.0  # seconds of training: the first epoch run here, the others
    mark = time.perf_counter()  # the last read-back (or snapshot): what is timed starts here
    for epoch in bar:
        if lowest is not None:
            lowest.before_epoch()
        pending.append(trainer.epoch())
        snapshot = (snapshot_every and (epoch + 1) % snapshot_every == 0) or (
            epoch + 1 in snapshot_at
        )
        saving = checkpoint_every and (epoch + 1) % checkpoint_every == 0
        last = epoch + 1 == end
        waited = time.perf_counter() - mark >= LOG_SECONDS
        if epoch == start or last or snapshot or saving or waited or lowest is not None:
            losses += read_back(pending, len(losses))
            pending, now = [], time.perf_counter()
            first, later = (now - mark, later) if epoch == start else (first, later + now - mark)
            mark = now
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if snapshot:
            keep(epoch + 1)
        if saving:
            write_checkpoint(checkpoint, run_checkpoint(trainer, losses, identity))
        if snapshot or saving:
            mark = time.perf_counter()
        if lowest is not None and lowest.epochs_since_lowest(losses[-1]) >= config.patience:
            break
    if lowest is not None:
        lowest.restore()
    # before embedding: what continues the run
    state = RunState(trainer, losses) if single else None
    # the first epoch's one-off costs left out, unless it is the only one (none: untrained)
    run = len(losses) - start
    epoch_ms = 1000.0 * (later / (run - 1) if run > 1 else first)
    kept = lowest is None and end in snapshots  # else the restored weights'
    final = check_finite_embeddings(snapshots[end] if kept else trainer.embed())
    encoder = trainer.method.embedding_model().eval()
    return TrainResult(
        final,
        losses,
        epoch_ms,
        snapshots,
        encoder=encoder,
        encoder_states=states,
        method=trainer.method,
        config=config,
        checkpoint=state,
        transform=trainer.transform,
        epoch=None if end == config.epochs else end,
        resumed_from=None if resume is None else start,
    )


class LowestLoss:
    """The weights that gave the lowest training loss so far, and the epochs since (DGI's
    and MVGRL's stopping rule: their code saves the model on a new lowest loss, stops after
    ``patience`` epochs without one and reloads it). An epoch's loss is computed on the
    weights it starts from, so those are what is kept: a copy of ``model``'s state before
    each epoch, held when its loss is the lowest."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.lowest, self.since = math.inf, 0
        self.best: dict[str, Tensor] | None = None
        self.start: dict[str, Tensor] | None = None

    @torch.no_grad()
    def before_epoch(self) -> None:
        self.start = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def epochs_since_lowest(self, loss: float) -> int:
        """The epochs since the lowest loss, after the epoch whose loss is ``loss``."""
        if loss < self.lowest:
            self.lowest, self.since, self.best = loss, 0, self.start
        else:
            self.since += 1
        return self.since

    def restore(self) -> None:
        if self.best is not None:
            self.model.load_state_dict(self.best)


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
    snapshot_at: Collection[int] = (),
    resume: str | Path | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 0,
    stop_after: int | None = None,
    **options,
) -> TrainResult:
    """A run of :func:`~cl2gnn.node.train_node_model` once its ``config`` is resolved, for a
    registered method or a callable objective (not ``"auto"``): the trainer ``config`` calls
    for, built with ``seed`` and ``options`` (the trainers' ``encoder``, ``augment``,
    ``device``), trained by :func:`fit` (``snapshot_at``, ``resume``, ``checkpoint``,
    ``checkpoint_every``, ``stop_after``)."""
    trainer_class = FullBatchTrainer if config.batch_size is None else MinibatchTrainer
    trainer = trainer_class(data, method, config, seed=seed, **options)
    result = fit(
        trainer,
        progress,
        snapshot_every,
        f"{trainer.label} seed {seed}",
        snapshot_at=snapshot_at,
        resume=resume,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        stop_after=stop_after,
    )
    result.seed = seed
    return result
