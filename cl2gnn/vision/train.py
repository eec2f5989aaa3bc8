"""Self-supervised pre-training loop: device-resident uint8 images, batched augmentations,
SGD/LARS with warm-up + cosine, bf16 autocast, channels_last and ``torch.compile`` on CUDA,
per-epoch checkpoints with exact resume, a kNN monitor, and a progress bar.

Under a process group of ``P`` ranks (``torchrun``) the same loop is data-parallel: every
rank draws the same global batch order and takes its ``1/P`` shard of each batch, augments
it on its own device with its own generator (seeded from the run's seed and the rank by
:func:`~cl2gnn.distributed.launch.stream_seed`: no two ``(seed, rank)`` share a stream),
normalises batches over the global batch
(:func:`~cl2gnn.distributed.batchnorm.convert_batchnorm`) and averages gradients with DDP;
the objective sees global negatives through its ``distributed`` mode. The kNN monitor
embeds a shard per rank and gathers the features; rank 0 writes the checkpoint (with every
rank's augmentation generator, for an exact resume) and shows the progress bar."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from .. import _files
from .._validation import non_finite_entries
from ..distributed import Shard, gather_rows, rank_and_world
from ..distributed.batchnorm import convert_batchnorm
from ..distributed.launch import stream_seed
from .augment import MultiViewAugment
from .data import ImageSet
from .knn_monitor import knn_accuracy
from .optim import build_optimizer, warmup_cosine

AUGMENT_STREAM = 0  # the key of each rank's augmentation stream under the run's seed


@dataclass
class PretrainConfig:
    epochs: int = 200
    batch_size: int = 512  # the global batch: split across the ranks of a process group
    lr: float = 0.3  # per 256 images; scaled linearly with the (global) batch size
    weight_decay: float = 1e-4
    optimizer: str = "sgd"
    warmup_epochs: int = 10
    seed: int = 0
    amp: bool = True  # bf16 autocast on CUDA
    channels_last: bool = True
    compile: bool = False
    knn_k: int = 200
    knn_t: float = 0.1
    eval_every: int = 1


@dataclass
class History:
    losses: list[float] = field(default_factory=list)
    knn_accuracy: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)


def check_trained(path: Path, epoch: object, history: object, epochs: int) -> None:
    """A checkpoint's record of what it trained, bounded before it is used: ``epoch`` an
    integer in ``0 … epochs`` (this run's; past it, a resume would train nothing and report
    the checkpoint's count), and ``history`` a :class:`History` of that many epochs (a loss
    and a time for each, at most one kNN accuracy each). ``ValueError`` naming the file and
    the field otherwise."""
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise ValueError(f"{path}: epoch {epoch!r} is not a count of epochs trained")
    if epoch > epochs:
        raise ValueError(
            f"{path}: epoch {epoch} is past this run's {epochs} epochs, which would train "
            f"nothing; resume it with {epoch} epochs or more"
        )
    lengths = {
        "losses": (epoch, epoch),
        "epoch_seconds": (epoch, epoch),
        "knn_accuracy": (0, epoch),
    }
    keys = isinstance(history, dict) and set(history) == set(lengths)
    if not (keys and all(_numbers(history[key], *lengths[key]) for key in lengths)):
        raise ValueError(
            f"{path}: history is not the record of {epoch} epochs (lists {', '.join(lengths)} "
            f"of numbers: {epoch} losses and times, at most {epoch} kNN accuracies)"
        )


def _numbers(values: object, fewest: int, most: int) -> bool:
    """Whether ``values`` is a list of ``fewest`` to ``most`` finite real numbers."""
    return (
        isinstance(values, list)
        and fewest <= len(values) <= most
        and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in values
        )
    )


# what a resume may change: the epochs (and the warm-up they set) and compilation, a speed
# choice; any other field, or option of the run, must be the checkpoint's
CONFIG_A_RESUME_MAY_CHANGE = ("epochs", "warmup_epochs", "compile")


def check_same_run(path: Path, state: dict, config: dict, identity: dict | None) -> None:
    """``ValueError`` naming the file and what differs unless the checkpoint ``state`` was
    written by this run: its configuration (``config``, but :data:`CONFIG_A_RESUME_MAY_CHANGE`) and,
    where given, the run's options (``identity``: the command's, such as the seed, the
    batch, the learning rate and the objective's), which it records under ``"run"``."""
    saved = state.get("config")
    if not isinstance(saved, dict):
        raise ValueError(f"{path}: holds no configuration of its run")
    changed = {
        name: (saved.get(name), value)
        for name, value in config.items()
        if name not in CONFIG_A_RESUME_MAY_CHANGE and saved.get(name) != value
    }
    if identity is not None:
        run = state.get("run")
        if not isinstance(run, dict):
            raise ValueError(
                f"{path}: holds no record of its run's options (written before cl2gnn kept "
                "them), so it cannot be told to be this run's; start afresh with --overwrite"
            )
        changed |= {k: (run.get(k), v) for k, v in identity.items() if run.get(k) != v}
    if changed:
        shown = ", ".join(f"{k}={old!r} (this run: {new!r})" for k, (old, new) in changed.items())
        raise ValueError(
            f"{path}: written by another run, with {shown}; resume with its options (only "
            "the epochs may grow), or start afresh with --overwrite"
        )


class Pretrainer:
    """Trains ``model`` (an :class:`~cl2gnn.vision.models.SSLNet`) with ``objective``."""

    def __init__(
        self,
        model: torch.nn.Module,
        objective: torch.nn.Module,
        train: ImageSet,
        test: ImageSet,
        augment: MultiViewAugment,
        config: PretrainConfig,
        device: str | torch.device = "cpu",
        out: str | Path | None = None,
        identity: dict | None = None,
    ) -> None:
        if len(train) < config.batch_size:
            raise ValueError(
                f"batch size {config.batch_size} exceeds the {len(train)} training images"
            )
        self.rank, self.world = rank_and_world()
        if config.batch_size % self.world:
            raise ValueError(
                f"the batch size {config.batch_size} must be a multiple of the "
                f"{self.world} processes (each takes an equal shard of every batch)"
            )
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.model, self.objective = model.to(self.device), objective.to(self.device)
        if self.world > 1:
            self.model = convert_batchnorm(self.model, self.device)
        if self.cuda and config.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        trained = self.model
        if self.world > 1:
            trained = DistributedDataParallel(
                self.model, device_ids=[self.device] if self.cuda else None
            )
        self.forward = torch.compile(trained) if (config.compile and self.cuda) else trained
        self.train_images = train.images.to(self.device)
        self.train_labels, self.test = train.labels, test
        self.augment, self.config = augment, config
        self.optimizer = build_optimizer(
            self.model, config.optimizer, config.lr * config.batch_size / 256, config.weight_decay
        )
        self.base_lrs = [g["lr"] for g in self.optimizer.param_groups]
        self.steps_per_epoch = len(train) // config.batch_size
        self.order_gen = torch.Generator().manual_seed(config.seed)  # the same on every rank
        # each rank's own stream: seed s on rank 1 is not seed s + 1 on rank 0
        self.augment_gen = torch.Generator(device=self.device).manual_seed(
            stream_seed(config.seed, AUGMENT_STREAM, self.rank)
        )
        self.epoch, self.history = 0, History()
        self.out = Path(out) if out is not None else None
        self.identity = identity  # the run's options, kept in its checkpoints

    @property
    def device_name(self) -> str:
        return torch.cuda.get_device_name(self.device) if self.cuda else "cpu"

    @property
    def main(self) -> bool:
        """Whether this process shows progress and writes files (rank 0)."""
        return self.rank == 0

    def fit(self, progress: bool = True) -> History:
        c = self.config
        bar = tqdm(
            range(self.epoch, c.epochs), desc="pretrain", disable=not (progress and self.main)
        )
        for _ in bar:
            start = time.perf_counter()
            loss = self.train_epoch()
            self.history.epoch_seconds.append(time.perf_counter() - start)
            self.history.losses.append(loss)
            self.epoch += 1
            if self.epoch % c.eval_every == 0 or self.epoch == c.epochs:
                self.history.knn_accuracy.append(self.knn_monitor())
            bar.set_postfix(loss=f"{loss:.4f}", knn=f"{self.history.knn_accuracy[-1]:.4f}")
            if self.out is not None:
                self.save_checkpoint(self.out / "checkpoint.pt")
        return self.history

    def train_epoch(self) -> float:
        self.model.train()
        c = self.config
        # drawn on the CPU generator (reproducible on any device), moved once per epoch
        perm = torch.randperm(len(self.train_labels), generator=self.order_gen).to(self.device)
        total, warmup = c.epochs * self.steps_per_epoch, c.warmup_epochs * self.steps_per_epoch
        losses = []
        for b in range(self.steps_per_epoch):
            step = self.epoch * self.steps_per_epoch + b
            factor = warmup_cosine(step, total, warmup)
            for group, base in zip(self.optimizer.param_groups, self.base_lrs, strict=True):
                group["lr"] = base * factor
            idx = perm[b * c.batch_size : (b + 1) * c.batch_size]
            shard = len(idx) // self.world  # this rank's part of the global batch
            loss = self.train_step(idx[self.rank * shard : (self.rank + 1) * shard])
            losses.append(loss)
        if hasattr(self.objective, "end_epoch"):
            self.objective.end_epoch()
        loss = torch.stack(losses).mean()
        if self.world > 1:  # the ranks' values average to the global loss
            dist.all_reduce(loss)
            loss = loss / self.world
        return float(loss)

    def train_step(self, idx: torch.Tensor) -> torch.Tensor:
        images = self.train_images[idx]
        views = torch.cat(
            [self.augment(images, self.augment_gen), self.augment(images, self.augment_gen)]
        )
        if self.cuda and self.config.channels_last:
            views = views.contiguous(memory_format=torch.channels_last)
        with torch.autocast(
            self.device.type, dtype=torch.bfloat16, enabled=self.cuda and self.config.amp
        ):
            h, z, p = self.forward(views)
        n = len(idx)
        split = [(t[:n], t[n:]) if t is not None else (None, None) for t in (h, z, p)]
        out1, out2 = tuple(s[0] for s in split), tuple(s[1] for s in split)
        loss = self.objective(out1, out2, idx)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    @torch.no_grad()
    def features(self, images: torch.Tensor, batch: int = 1024) -> torch.Tensor:
        """Frozen backbone features of un-augmented images (normalised like training);
        under a process group each rank embeds a contiguous shard and the features are
        gathered, so every rank returns all of them."""
        self.model.eval()
        sizes = [len(part) for part in torch.arange(len(images)).tensor_split(self.world)]
        start = sum(sizes[: self.rank])
        mine = images[start : start + sizes[self.rank]]
        out = []
        for first in range(0, len(mine), batch):
            x = self.augment.evaluation_view(mine[first : first + batch].to(self.device))
            with torch.autocast(
                self.device.type, dtype=torch.bfloat16, enabled=self.cuda and self.config.amp
            ):
                out.append(self.model.backbone(x).float())
        local = torch.cat(out) if out else torch.empty(0, self.model.feature_dim)
        if self.world == 1:
            return local
        return gather_rows(local.to(self.device), Shard(self.rank, tuple(sizes)), grad=False)

    def knn_monitor(self) -> float:
        train = self.features(self.train_images)
        test = self.features(self.test.images)
        c = self.config
        return knn_accuracy(train, self.train_labels, test, self.test.labels, c.knn_k, c.knn_t)

    def save_checkpoint(self, path: Path) -> None:
        """Written by rank 0 (a temporary file moved into place); the model, optimiser and
        memory are the same on every rank, the augmentation generators are not: all are
        kept."""
        augment_states = [self.augment_gen.get_state().cpu()]
        if self.world > 1:
            augment_states = [None] * self.world
            dist.all_gather_object(augment_states, self.augment_gen.get_state().cpu())
        if not self.main:
            return
        state = {
            "model": self.model.state_dict(),
            "objective": self.objective.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "order_gen": self.order_gen.get_state(),
            "augment_gen": augment_states,
            "epoch": self.epoch,
            "history": asdict(self.history),
            "config": asdict(self.config),
            "run": self.identity,
        }
        with _files.atomic_path(path) as partial:
            _files.save_torch(state, partial)

    def load_checkpoint(self, path: Path) -> None:
        # on the CPU: generator states must stay there; load_state_dict moves the rest.
        # weights_only: a checkpoint holds tensors and plain values, and unpickling anything
        # else could run code (pickle.UnpicklingError names what it refused)
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict):
            raise ValueError(f"{path}: not a pre-training checkpoint")
        epoch, history = state.get("epoch"), state.get("history")
        check_trained(path, epoch, history, self.config.epochs)
        check_same_run(path, state, asdict(self.config), self.identity)
        non_finite = non_finite_entries(
            {k: state.get(k) for k in ("model", "objective", "optimizer")}
        )
        if non_finite:
            raise ValueError(f"{path}: NaN or inf in {', '.join(non_finite[:3])}")
        if len(state["augment_gen"]) != self.world:
            raise ValueError(
                f"{path} was written by {len(state['augment_gen'])} processes; resume it "
                f"with as many (this run has {self.world})"
            )
        self.model.load_state_dict(state["model"])
        self.objective.load_state_dict(state["objective"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.order_gen.set_state(state["order_gen"])
        own = state["augment_gen"][self.rank]
        self.augment_gen.set_state(own)
        self.epoch = epoch
        self.history = History(**history)

    def write_log(self, path: Path) -> None:
        """The history as JSON, written by rank 0 (a temporary file moved into place)."""
        if self.main:
            _files.write_text_atomic(path, json.dumps(asdict(self.history), indent=1))
