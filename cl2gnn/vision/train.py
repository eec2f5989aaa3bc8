"""Self-supervised pre-training loop: device-resident uint8 images, batched augmentations,
SGD/LARS with warm-up + cosine, bf16 autocast, channels_last and ``torch.compile`` on CUDA,
per-epoch checkpoints with exact resume, a kNN monitor, and a progress bar."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from tqdm.auto import tqdm

from .augment import MultiViewAugment
from .data import ImageSet
from .knn_monitor import knn_accuracy
from .optim import build_optimizer, warmup_cosine


@dataclass
class PretrainConfig:
    epochs: int = 200
    batch_size: int = 512
    lr: float = 0.3  # per 256 images; scaled linearly with the batch size
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
    ) -> None:
        if len(train) < config.batch_size:
            raise ValueError(
                f"batch size {config.batch_size} exceeds the {len(train)} training images"
            )
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.model, self.objective = model.to(self.device), objective.to(self.device)
        if self.cuda and config.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.forward = torch.compile(self.model) if (config.compile and self.cuda) else self.model
        self.train_images = train.images.to(self.device)
        self.train_labels, self.test = train.labels, test
        self.augment, self.config = augment, config
        self.optimizer = build_optimizer(
            self.model, config.optimizer, config.lr * config.batch_size / 256, config.weight_decay
        )
        self.base_lrs = [g["lr"] for g in self.optimizer.param_groups]
        self.steps_per_epoch = len(train) // config.batch_size
        self.order_gen = torch.Generator().manual_seed(config.seed)
        self.augment_gen = torch.Generator(device=self.device).manual_seed(config.seed + 1)
        self.epoch, self.history = 0, History()
        self.out = Path(out) if out is not None else None

    @property
    def device_name(self) -> str:
        return torch.cuda.get_device_name(self.device) if self.cuda else "cpu"

    def fit(self, progress: bool = True) -> History:
        c = self.config
        bar = tqdm(range(self.epoch, c.epochs), desc="pretrain", disable=not progress)
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
            loss = self.train_step(idx)
            losses.append(loss)
        if hasattr(self.objective, "end_epoch"):
            self.objective.end_epoch()
        return float(torch.stack(losses).mean())

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
        """Frozen backbone features of un-augmented images (normalised like training)."""
        self.model.eval()
        out = []
        for start in range(0, len(images), batch):
            x = self.augment.evaluation_view(images[start : start + batch].to(self.device))
            with torch.autocast(
                self.device.type, dtype=torch.bfloat16, enabled=self.cuda and self.config.amp
            ):
                out.append(self.model.backbone(x).float())
        return torch.cat(out)

    def knn_monitor(self) -> float:
        train = self.features(self.train_images)
        test = self.features(self.test.images)
        c = self.config
        return knn_accuracy(train, self.train_labels, test, self.test.labels, c.knn_k, c.knn_t)

    def save_checkpoint(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "model": self.model.state_dict(),
            "objective": self.objective.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "order_gen": self.order_gen.get_state(),
            "augment_gen": self.augment_gen.get_state(),
            "epoch": self.epoch,
            "history": asdict(self.history),
            "config": asdict(self.config),
        }
        tmp = path.with_suffix(".tmp")
        torch.save(state, tmp)
        tmp.replace(path)

    def load_checkpoint(self, path: Path) -> None:
        state = torch.load(path, map_location=self.device, weights_only=False)
        self.model.load_state_dict(state["model"])
        self.objective.load_state_dict(state["objective"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.order_gen.set_state(state["order_gen"])
        self.augment_gen.set_state(state["augment_gen"].to(self.augment_gen.get_state().device))
        self.epoch = state["epoch"]
        self.history = History(**state["history"])

    def write_log(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self.history), indent=1))
