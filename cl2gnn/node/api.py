"""The entry point of node-level training: :func:`train_node_model`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import Tensor
from torch_geometric.data import Data

from .evaluation.auto import SCORING_SEEDS, choose_method
from .config import NodeConfig
from .defaults import default_config
from .evaluation.probes import default_protocol, num_splits
from .training.fit import train_run
from .names import AUTO
from .result import TrainResult
from .views import View


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
    resume: str | Path | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 0,
) -> TrainResult:
    """Train an encoder on ``data`` with ``method`` — a name of
    :data:`~cl2gnn.node.methods.REGISTRY`, any callable ``(z1, z2, h1, h2) -> loss`` of the
    projections and encoder outputs on GRACE's scheme, or ``"auto"`` (the candidate with the
    best validation score on ``data``, :func:`~cl2gnn.node.evaluation.auto.choose_method`; its
    ``result.choice`` says which and why) — and return the trained encoder with its
    embeddings (:class:`~cl2gnn.node.result.TrainResult`).

    Args:
        data: the graph: ``x`` ``[N, F]`` floating point, ``edge_index`` ``[2, E]``, and
            optionally ``edge_weight`` ``[E]`` (checked: ``ValueError`` naming the field).
        method: what to train with.
        config: the settings (:class:`NodeConfig`); ``None``: :func:`default_config` of
            ``data``, ``method`` and ``encoder``.
        encoder: any ``torch.nn.Module`` called as ``encoder(x, edge_index)`` (with
            ``edge_weight=`` where ``data`` has weights) that returns ``[N, d]`` (checked at
            every call); it reads ``data.x`` after ``result.transform`` (the
            configuration's ``normalize_features``), and ``config``'s fields of the built-in
            encoder must keep their defaults (``default_config(data, method,
            encoder=encoder)`` leaves them so). ``None``: the built-in
            :class:`~cl2gnn.node.GraphEncoder` that ``config`` describes.
        augment: the views: a callable ``Data -> Data`` (a PyG transform, or
            ``Compose`` of them) for both, or a pair (one per view); ``None``: the
            configuration's :class:`~cl2gnn.node.DropEdge` and
            :class:`~cl2gnn.node.MaskFeatures`.
        seed: seeds torch, NumPy and Python (the built-in encoder's initial weights, the
            views).
        device: where to train.
        progress: a progress bar over the epochs.
        snapshot_every: also keep the embeddings every that many epochs.
        resume: continue the run saved there (a ``seed_<k>`` folder of
            :meth:`~cl2gnn.node.TrainResult.save`, or its ``checkpoint.pt``) from its
            epoch, to ``config.epochs``: the same method, configuration (``epochs`` may
            grow), seed, graph and encoder class, else ``ValueError``. The result is the
            uninterrupted run's, bit for bit on the CPU: the run the checkpoint was
            written in, or a longer one where the schedules do not read the number of
            epochs (``lr_cosine``, ``ema_cosine``).
        checkpoint, checkpoint_every: write the run's state to the folder ``checkpoint``
            (``checkpoint.pt``) after every ``checkpoint_every`` epochs, for ``resume``.

    With ``config.epochs == 0`` the embeddings are the encoder's at its initialisation (a
    baseline). Full-batch by default; ``config.batch_size`` trains on mini-batches of seed
    nodes and their sampled neighborhoods, in one process or, under ``torchrun``, across
    the process group."""
    if method == AUTO:
        if resume is not None or checkpoint_every:
            raise ValueError(
                "resume and checkpoint_every: method 'auto' chooses again; train the chosen "
                "method with its configuration (result.choice)"
            )
        return _auto(data, config, encoder, augment, seed, device, progress)
    if config is None:
        config = default_config(data, method, encoder=encoder)
    return train_run(
        data,
        method,
        config,
        seed=seed,
        progress=progress,
        snapshot_every=snapshot_every,
        resume=resume,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        encoder=encoder,
        augment=augment,
        device=device,
    )


def _auto(data, config, encoder, augment, seed, device, progress) -> TrainResult:
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
