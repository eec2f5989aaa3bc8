"""What training hands back (:class:`TrainResult`): the trained encoder, the method, the
embeddings and the losses; saved as files that load without running code (``encoder.pt``
holds tensors and plain values, read with ``torch.load(..., weights_only=True)``), and
:func:`load_encoder`, which rebuilds the built-in encoder from them."""

from __future__ import annotations

import csv
import io
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor
from torch_geometric.transforms import BaseTransform

from .._files import atomic_path, write_text_atomic
from .config import NodeConfig
from .methods import NodeMethod
from .models import GraphEncoder
from .trainer import feature_transform

FORMAT = "cl2gnn-node-encoder"
VERSION = 2  # 2: the encoder's arguments under PyG's names (in/hidden/out_channels)
FILES = ("encoder.pt", "embeddings.pt", "losses.csv", "losses.png")


@dataclass
class TrainResult:
    """One training run.

    Attributes:
        embeddings: the trained encoder's output on the clean graph ``[N, d]`` (what
            ``encoder(data.x, data.edge_index)`` returns, in eval mode, ``data`` after
            :attr:`transform`).
        losses: each epoch's mean loss.
        epoch_ms: the mean wall time of an epoch (the first left out when there are others).
        snapshots: epoch ``->`` the embeddings after it (``snapshot_every``).
        encoder: the trained encoder, in eval mode (the built-in
            :class:`~cl2gnn.node.GraphEncoder` or the module that was passed), which read
            the graph after :attr:`transform`.
        method: the trained method: its heads, predictors, target encoder and memory.
        config: the configuration it trained with.
        seed: the seed it trained with.
        choice: with method ``"auto"``, what was chosen and why
            (:class:`~cl2gnn.node.auto.Choice`).
    """

    embeddings: Tensor
    losses: list[float] = field(default_factory=list)
    epoch_ms: float = 0.0
    snapshots: dict[int, Tensor] = field(default_factory=dict)
    encoder: torch.nn.Module | None = None
    method: NodeMethod | None = None
    config: NodeConfig | None = None
    seed: int = 0
    choice: object | None = None

    @property
    def transform(self) -> BaseTransform | None:
        """What training applied to a graph before :attr:`encoder` read it, to apply the
        same way before embedding another: the configuration's row normalisation (PyG's
        ``NormalizeFeatures``) for an encoder of one's own, ``None`` for the built-in
        encoder (it normalises inside): ``encoder(transform(data).x, data.edge_index)``."""
        if self.config is None or self.encoder is None:
            return None
        return feature_transform(self.config, self.encoder)

    def save(self, root: str | Path) -> Path:
        """Write ``root/seed_<seed>/``: ``encoder.pt`` (the weights, and for the built-in
        encoder what rebuilds it: :func:`load_encoder`; a module of your own is saved as its
        state dict, to load into your class), ``embeddings.pt`` (``[N, d]``), ``losses.csv``
        (``epoch,loss``) and ``losses.png``; returns that folder. Each file appears
        complete or not at all."""
        folder = Path(root) / f"seed_{self.seed}"
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(folder / "encoder.pt") as path:
            torch.save(encoder_checkpoint(self.encoder, self.method, self.config), path)
        with atomic_path(folder / "embeddings.pt") as path:
            torch.save(self.embeddings.detach().cpu().contiguous(), path)
        rows = io.StringIO()
        writer = csv.writer(rows, lineterminator="\n")
        writer.writerow(("epoch", "loss"))
        writer.writerows((epoch, repr(loss)) for epoch, loss in enumerate(self.losses, 1))
        write_text_atomic(folder / "losses.csv", rows.getvalue())
        plot_losses(self.losses, folder / "losses.png", f"seed {self.seed}")
        return folder


def encoder_checkpoint(
    encoder: torch.nn.Module, method: NodeMethod | None, config: NodeConfig | None
) -> dict:
    """``encoder``'s weights as plain values: the built-in encoder with its constructor's
    arguments, any other module with its class's name (to read, never to import)."""
    builtin = isinstance(encoder, GraphEncoder)
    cls = type(encoder)
    return {
        "format": FORMAT,
        "version": VERSION,
        "builtin": builtin,
        "spec": encoder.spec if builtin else None,
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "state_dict": {k: v.detach().cpu() for k, v in encoder.state_dict().items()},
        "method": None if method is None else getattr(method, "label", method.name),
        "config": None if config is None else config.as_dict(),
    }


def read_checkpoint(path: str | Path) -> dict:
    """The checkpoint at ``path`` (an ``encoder.pt``, or the folder holding one), loaded
    with ``weights_only=True``; ``ValueError`` naming the file if it is none of cl2gnn's or
    would need code run to load."""
    path = Path(path)
    if path.is_dir():
        path = path / "encoder.pt"
    if not path.is_file():
        raise ValueError(f"{path}: no such checkpoint (an encoder.pt, or its folder)")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as error:
        reason = " ".join(str(error).split())[:200]
        raise ValueError(
            f"{path}: not a checkpoint that loads without running code ({reason})"
        ) from None
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        raise ValueError(f"{path}: not a cl2gnn node encoder checkpoint")
    if checkpoint.get("version") != VERSION:
        raise ValueError(
            f"{path}: checkpoint version {checkpoint.get('version')!r}, this cl2gnn reads "
            f"version {VERSION}"
        )
    return checkpoint


def load_encoder(path: str | Path, device: str | torch.device = "cpu") -> GraphEncoder:
    """The built-in encoder saved at ``path`` (a ``seed_<k>`` folder of ``cl2gnn node --save``
    or :meth:`TrainResult.save`, or its ``encoder.pt``), in eval mode, ready to call as
    ``encoder(x, edge_index)`` on any graph with the same feature width. A module of your
    own was saved as its state dict: load that into your class."""
    checkpoint = read_checkpoint(path)
    if not checkpoint["builtin"]:
        raise ValueError(
            f"{path}: holds the weights of your own encoder ({checkpoint['class']}); build it "
            "and call load_state_dict(torch.load(path, weights_only=True)['state_dict'])"
        )
    encoder = GraphEncoder(**checkpoint["spec"])
    encoder.load_state_dict(checkpoint["state_dict"])
    return encoder.to(device).eval()


def plot_losses(losses: list[float], path: Path, title: str) -> None:
    """The training curve, loss against epoch, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5, 3.2))
    axes.plot(range(1, len(losses) + 1), losses)
    axes.set(xlabel="epoch", ylabel="loss", title=title)
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=100)
    plt.close(figure)
