"""A node-level run's state as the checkpoint it resumes from (``checkpoint.pt``, beside
``encoder.pt``): what continues the run exactly
(:meth:`~cl2gnn.node.training.trainer.Trainer.state_dict` and the losses so far) and what identifies
it (method, configuration, seed, graph, encoder),
written complete or not at all, read with ``weights_only=True`` and checked field by field
before anything is loaded."""

from __future__ import annotations

import hashlib
import math
import os
import pickle
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor
from torch_geometric.data import Data

from ..._files import atomic_path, save_torch
from ..._validation import non_finite_entries
from ..config import NodeConfig, config_from_dict

if TYPE_CHECKING:
    from .trainer import Trainer

CHECKPOINT = "checkpoint.pt"
# 2: the method module holds the encoder (its state dict's keys: encoder.*, head.*, ...)
FORMAT, VERSION = "cl2gnn-node-checkpoint", 2


def load_file(path: Path, what: str) -> object:
    """``torch.load(path, weights_only=True)`` on the CPU; ``ValueError`` naming the file if
    it is none, would need code run to load, or cannot be read (truncated, damaged)."""
    if not os.path.lexists(path):
        raise ValueError(f"{path}: no such {what}")
    if not path.is_file():
        raise ValueError(f"{path}: not a {what}: a folder, or a link to no file")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        reason = " ".join(str(error).split())[:200]
        raise ValueError(
            f"{path}: not a {what} that loads without running code ({reason})"
        ) from None
    except Exception as error:  # a truncated or damaged file fails in any of many ways
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"{path}: cannot be read as a {what} ({reason})") from None


def holds_checkpoint(folder: Path) -> bool:
    """Whether ``folder`` (a seed's) holds a run checkpoint to resume from: ``checkpoint.pt``
    there in any form (read by :func:`load_file`, which refuses one that is damaged, naming
    it: a damaged checkpoint is never passed over for a run from the start); ``False``
    where there is none. ``ValueError`` naming ``folder`` where it is no folder (a file, a
    link), whose checkpoint could not be looked for."""
    if os.path.lexists(folder) and (folder.is_symlink() or not folder.is_dir()):
        raise ValueError(
            f"{folder}: not a folder of a saved seed (a file, or a link); remove it to train "
            "that seed from the start"
        )
    return os.path.lexists(folder / CHECKPOINT)


def check_resumed_seeds(folder: Path, seeds: range, checkpoints: str) -> None:
    """``ValueError`` unless ``seeds`` covers every seed saved in the run folder
    ``folder`` (its ``seed_<k>`` folders and those in ``folder/checkpoints``, a killed run's
    periodic checkpoints): a resumed run replaces the saved one as a whole, so a seed it does
    not train would be deleted."""
    saved = {
        int(entry.name.removeprefix("seed_"))
        for place in (Path(folder), Path(folder) / checkpoints)
        if place.is_dir() and not place.is_symlink()
        for entry in place.iterdir()
        if re.fullmatch(r"seed_\d+", entry.name)
    }
    dropped = sorted(saved - set(seeds))
    if dropped:
        trained = (
            f"seed {seeds.start}" if len(seeds) == 1 else f"seeds {seeds.start} to {seeds.stop - 1}"
        )
        raise ValueError(
            f"resume: {folder} holds the seeds {', '.join(map(str, sorted(saved)))}; this "
            f"run trains {trained}, and would delete seed "
            f"{', '.join(map(str, dropped))} when it replaces the saved run: resume with every "
            "saved seed, or save into another folder"
        )


def graph_digest(data: Data) -> str:
    """A digest of the graph a run trains on: its features', edges' and weights' shapes,
    types and bytes (a checkpoint resumes on the graph it was written on)."""
    digest = hashlib.blake2b(digest_size=16)
    for key in ("x", "edge_index", "edge_weight"):
        value = data.get(key)
        if value is None:
            digest.update(f"{key}:none;".encode())
            continue
        value = value.detach().cpu().contiguous()
        digest.update(f"{key}:{value.dtype}:{tuple(value.shape)};".encode())
        digest.update(value.view(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def run_identity(trainer: Trainer) -> dict:
    """What a checkpoint of ``trainer``'s run must share with the run that resumes it:
    method, configuration (``epochs`` may grow), seed, graph and encoder class."""
    encoder = type(trainer.encoder)
    return {
        "method": trainer.label,
        "config": trainer.config.as_dict(),
        "seed": trainer.seed,
        "graph": graph_digest(trainer.data),
        "encoder": f"{encoder.__module__}.{encoder.__qualname__}",
    }


def run_checkpoint(trainer: Trainer, losses: list[float], identity: dict) -> dict:
    """The state of ``trainer``'s run after ``len(losses)`` epochs (``identity``:
    :func:`run_identity`): what continues it exactly (the losses so far,
    :meth:`~cl2gnn.node.training.trainer.Trainer.state_dict`) and what it must be resumed with."""
    return {
        "format": FORMAT,
        "version": VERSION,
        **identity,
        "epoch": len(losses),
        "losses": list(losses),
        "trainer": trainer.state_dict(),
    }


class RunState(Mapping):
    """:func:`run_checkpoint` of a run that ended, its identity completed where it is read:
    what continues the run is taken when it is made (the modules' tensors, the generators'
    states), what identifies it (:func:`run_identity`, a pass over the graph's bytes) only
    when the run is saved or resumed from, not by every run."""

    def __init__(self, trainer: Trainer, losses: list[float]) -> None:
        self._state = run_checkpoint(trainer, losses, {})
        self._identify = lambda: run_identity(trainer)
        self._full: dict | None = None

    def _checkpoint(self) -> dict:
        if self._full is None:
            self._full = {**self._state, **self._identify()}
            self._identify = None  # the trainer (and its graph) no longer held
        return self._full

    def __getitem__(self, key: str):
        return self._checkpoint()[key]

    def __iter__(self):
        return iter(self._checkpoint())

    def __len__(self) -> int:
        return len(self._checkpoint())


def on_cpu(value):
    """``value`` (tensors in dicts, lists and tuples) with every tensor on the CPU."""
    if isinstance(value, Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: on_cpu(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(on_cpu(v) for v in value)
    return value


def write_checkpoint(folder: str | Path, checkpoint: dict) -> Path:
    """``checkpoint`` (:func:`run_checkpoint`) as ``folder/checkpoint.pt``, complete or not
    at all; returns its path."""
    path = Path(folder) / CHECKPOINT
    with atomic_path(path) as temporary:
        save_torch(on_cpu(dict(checkpoint)), temporary)
    return path


def is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def resume_run(trainer: Trainer, path: str | Path, identity: dict) -> list[float]:
    """Load the checkpoint at ``path`` (a ``seed_<k>`` folder, or its ``checkpoint.pt``)
    into ``trainer`` and return the losses of the epochs it holds. Refused in one line
    (``ValueError`` naming the file and the field): a file of another format, a run of
    another method, configuration (but ``epochs``, which may grow), seed, graph or encoder
    (``identity``: :func:`run_identity` of ``trainer``), an ``epoch`` beyond the run's
    epochs, or fields out of their bounds."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT
    state = load_file(path, "run checkpoint (a checkpoint.pt, or its folder)")
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path}: not a cl2gnn node run checkpoint")
    if state.get("version") != VERSION:
        raise ValueError(
            f"{path}: checkpoint version {state.get('version')!r}, this cl2gnn reads "
            f"version {VERSION}"
        )
    try:
        check_identity(state, identity, trainer.config)
        losses = check_progress(state, trainer)
        trainer.load_state_dict(state["trainer"])
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    return losses


def check_identity(state: dict, identity: dict, config: NodeConfig) -> None:
    """``ValueError`` naming what differs between the checkpoint ``state`` and the run."""
    for key in ("method", "seed", "encoder"):
        if state.get(key) != identity[key]:
            raise ValueError(
                f"{key}: written by a run of {key} {state.get(key)!r}, this run's is "
                f"{identity[key]!r}"
            )
    if state.get("graph") != identity["graph"]:
        raise ValueError("graph: written by a run on another graph (its features or edges differ)")
    saved = config_from_dict(state["config"]) if isinstance(state.get("config"), dict) else None
    if saved is None:
        raise ValueError("config: missing")
    before, now = saved.as_dict(), config.as_dict()

    def shown(values: dict, name: str) -> str:
        return repr(values[name]) if name in values else "the method's default"

    changed = [
        f"{name}={shown(before, name)} (this run: {shown(now, name)})"
        for name in dict.fromkeys([*before, *now])
        if name not in ("epochs", "preset") and before.get(name) != now.get(name)
    ]
    if changed:
        raise ValueError(
            f"config: written with {', '.join(changed)}; resume with the checkpoint's "
            "configuration (only epochs may grow)"
        )


def check_progress(state: dict, trainer: Trainer) -> list[float]:
    """The checkpoint's ``epoch``, ``losses`` and ``steps`` within the run's bounds; its
    losses."""
    epoch, epochs = state.get("epoch"), trainer.config.epochs
    if not is_count(epoch):
        raise ValueError(f"epoch: must be an integer from 0 to the run's epochs, got {epoch!r}")
    if epoch > epochs:
        raise ValueError(
            f"epoch: the checkpoint is of epoch {epoch}, beyond this run's {epochs} epochs "
            f"(resume with epochs >= {epoch})"
        )
    losses = state.get("losses")
    if not isinstance(losses, list) or len(losses) != epoch:
        raise ValueError(f"losses: {epoch} epochs need {epoch} losses")
    if not all(isinstance(loss, float) and math.isfinite(loss) for loss in losses):
        raise ValueError("losses: must be finite numbers (a run stops at a non-finite loss)")
    inner = state.get("trainer")
    if not isinstance(inner, dict) or not {"model", "optimizer", "steps", "rng"} <= set(inner):
        raise ValueError("trainer: missing the model, optimizer, steps or rng")
    non_finite = non_finite_entries(inner)
    if non_finite:
        shown = ", ".join(non_finite[:3]) + (", …" if len(non_finite) > 3 else "")
        raise ValueError(f"trainer: NaN or inf in {shown}")
    steps = inner["steps"]
    if not is_count(steps) or steps != epoch * trainer.steps_per_epoch:
        raise ValueError(
            f"steps: {steps!r} after {epoch} epochs of {trainer.steps_per_epoch} steps"
        )
    return losses
