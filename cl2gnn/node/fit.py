"""One training loop for both trainers (epochs with timing and a progress bar, embedding
snapshots) and :func:`train_node_model`, which chooses the trainer."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from tqdm.auto import tqdm

from .._validation import check_integer
from .config import NodeConfig, default_config
from .evaluate import default_protocol, num_splits
from .fullbatch import FullBatchTrainer
from .minibatch import MinibatchTrainer
from .names import AUTO
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


def train_node_model(
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
    """Train an encoder on ``data`` with ``method`` — a name of
    :data:`~cl2gnn.node.methods.REGISTRY`, any callable ``(z1, z2, h1, h2) -> loss`` of the
    projections and encoder outputs on GRACE's scheme, or ``"auto"`` (the candidate with the
    best validation score on ``data``, :func:`~cl2gnn.node.auto.choose_method`; its
    ``result.choice`` says which and why) — and return the trained encoder with its
    embeddings (:class:`~cl2gnn.node.result.TrainResult`).

    Args:
        data: the graph: ``x`` ``[N, F]`` floating point, ``edge_index`` ``[2, E]``, and
            optionally ``edge_weight`` ``[E]`` (checked: ``ValueError`` naming the field).
        method: what to train with.
        config: the settings (:class:`NodeConfig`); ``None``: :func:`default_config` of
            ``data`` and ``method`` (without feature normalisation for an ``encoder`` of
            your own, which reads ``data.x`` as it is).
        encoder: any ``torch.nn.Module`` called as ``encoder(x, edge_index)`` (with
            ``edge_weight=`` where ``data`` has weights) that returns ``[N, d]``; ``None``:
            the built-in :class:`~cl2gnn.node.GraphEncoder` that ``config`` describes.
        augment: the views: a callable ``Data -> Data`` (a PyG transform, or
            ``Compose`` of them) for both, or a pair (one per view); ``None``: the
            configuration's :class:`~cl2gnn.node.DropEdge` and
            :class:`~cl2gnn.node.MaskFeatures`.
        seed: seeds torch, NumPy and Python (the built-in encoder's initial weights, the
            views).
        device: where to train.
        progress: a progress bar over the epochs.
        snapshot_every: also keep the embeddings every that many epochs.

    With ``config.epochs == 0`` the embeddings are the encoder's at its initialisation (a
    baseline). Full-batch by default; ``config.batch_size`` trains on mini-batches of seed
    nodes and their sampled neighbourhoods, in one process or, under ``torchrun``, across
    the process group."""
    if method == AUTO:
        return _auto(data, config, encoder, augment, seed, device, progress)
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


def _auto(data, config, encoder, augment, seed, device, progress) -> TrainResult:
    from .auto import SCORING_SEEDS, choose_method

    if config is not None or encoder is not None or augment is not None:
        raise ValueError(
            "method 'auto' chooses among the built-in candidates' own configurations and views "
            "(cl2gnn.node.config.CANDIDATES): pass no config, encoder or augment, or call "
            "choose_method(data, changes={...}) to change their fields"
        )
    seeds = range(seed, seed + SCORING_SEEDS)
    if default_protocol(data) == "splits":
        seeds = range(seed, min(seed + SCORING_SEEDS, num_splits(data)))
    choice = choose_method(data, seeds, device=device, progress=progress)
    result = choice.results[seed]
    result.choice = choice
    return result
