"""What training hands back (:class:`TrainResult`): the trained encoder, the method, the
embeddings, the losses and the run's state; one way to embed with what was trained
(:func:`embed`: ``result.embed``, :func:`load_encoder`, ``cl2gnn embed``); saved as files
that load without running code (tensors and plain values, read with
``torch.load(..., weights_only=True)``), the run's state as the checkpoint it resumes from
(:mod:`.checkpoint`)."""

from __future__ import annotations

import copy
import csv
import io
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform, NormalizeFeatures

from .._checks import first_line
from .._files import atomic_path, save_torch, write_text_atomic
from .config import NodeConfig
from .encoders.graph_encoder import GraphEncoder
from .encoders.spec import check_saved_encoder, check_saved_spec
from .encoders.user import NormalizedInput
from .inputs import check_graph
from .methods import REGISTRY, NodeMethod
from .training.checkpoint import load_file, write_checkpoint

FORMAT = "cl2gnn-node-encoder"
# 4: the feature transform an encoder of one's own read, and the method's embedding model
# as its method rebuilds it (3: MVGRL's two encoders as one module; 2: the arguments under
# PyG's names)
VERSION = 4


@dataclass
class TrainResult:
    """One training run.

    Attributes:
        embeddings: the trained encoder's output on the clean graph ``[N, d]`` (what
            ``embed(data.x, data.edge_index)`` returns: bit for bit in full-batch training,
            to float rounding after mini-batches, whose embeddings come from layer-wise
            inference; ``embed`` applies :attr:`transform` first).
        losses: each epoch's mean loss.
        epoch_ms: the mean wall time of an epoch (the first left out when there are others).
        snapshots: epoch ``->`` the embeddings after it (``snapshot_every``, ``snapshot_at``;
            epoch 0: at the initialisation).
        encoder_states: epoch ``->`` :attr:`encoder`'s weights after it (``snapshot_at``),
            for :meth:`at_epoch`.
        encoder: the module that embeds, in eval mode, called as PyG's models are on the
            graph after :attr:`transform`: the trained encoder (the built-in
            :class:`~cl2gnn.node.GraphEncoder` or the module that was passed), or for a
            method that embeds with more, one module holding it all (MVGRL:
            :class:`~cl2gnn.node.methods.mvgrl.MVGRLEncoder`, its graph encoder and its
            diffusion encoder; :meth:`~cl2gnn.node.NodeMethod.embedding_model`).
        method: the trained method: its heads, predictors, target encoder and memory.
        config: the configuration it trained with.
        seed: the seed it trained with.
        choice: with method ``"auto"``, what was chosen and why
            (:class:`~cl2gnn.node.evaluation.auto.Choice`).
        transform: what training applied to a graph before :attr:`encoder` read it, to
            apply the same way before embedding another (:meth:`embed` does): the
            configuration's row normalisation (PyG's ``NormalizeFeatures``) for an encoder
            of one's own, ``None`` for the built-in encoder (it normalises inside).
        epoch: the epoch whose encoder this is where :meth:`at_epoch` took an earlier one
            than the last (0: the untrained encoder); ``None``: the last.
        checkpoint: the run's state at the end of training
            (:func:`~cl2gnn.node.training.checkpoint.run_checkpoint`): what
            :meth:`save` writes as ``checkpoint.pt`` and ``resume=`` continues from.
        resumed_from: the epoch a resumed run continued from (``None``: not resumed).
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
    checkpoint: dict | None = field(default=None, repr=False)
    transform: BaseTransform | None = None
    encoder_states: dict[int, dict[str, Tensor]] = field(default_factory=dict, repr=False)
    epoch: int | None = None
    resumed_from: int | None = None

    def at_epoch(self, epoch: int) -> TrainResult:
        """The run as it stood after ``epoch`` (one of :attr:`encoder_states`): that
        epoch's encoder, embeddings and losses, labelled with :attr:`epoch`. The last
        epoch's method (heads, predictors) and no checkpoint to resume from: training went
        on past this encoder."""
        if epoch not in self.encoder_states:
            raise ValueError(f"epoch: {epoch} was not kept (kept: {sorted(self.encoder_states)})")
        if epoch == len(self.losses) and self.epoch is None:
            return self
        encoder = copy.deepcopy(self.encoder)
        encoder.load_state_dict(self.encoder_states[epoch])
        return replace(
            self,
            embeddings=self.snapshots[epoch],
            losses=self.losses[:epoch],
            snapshots={},
            encoder=encoder.eval(),
            checkpoint=None,
            encoder_states={},
            epoch=epoch,
        )

    def encoder_input(self, x: Tensor) -> Tensor:
        """Raw node features as :attr:`encoder` reads them: :attr:`transform` applied, as
        training applied it to ``data.x``."""
        return x if self.transform is None else self.transform(Data(x=x)).x

    def embed(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """The embeddings of any graph with the training graph's feature width, as training
        computed :attr:`embeddings` (:func:`embed` of :attr:`encoder` on
        :meth:`encoder_input`)."""
        return embed(self.encoder, self.encoder_input(x), edge_index, edge_weight)

    def save(self, root: str | Path) -> Path:
        """Write ``root/seed_<seed>/``: ``encoder.pt`` (:attr:`encoder`'s weights, and for
        the built-in encoder what rebuilds it; :func:`load_encoder` reads it back),
        ``embeddings.pt`` (``[N, d]``), ``losses.csv`` (``epoch,loss``), ``losses.png`` and
        ``checkpoint.pt`` (the run's state, which ``resume=`` continues from); returns that
        folder. Each file appears complete or not at all."""
        folder = Path(root) / f"seed_{self.seed}"
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(folder / "encoder.pt") as path:
            checkpoint = encoder_checkpoint(self.encoder, self.method, self.config, self.transform)
            save_torch(checkpoint, path)
        if self.checkpoint is not None:
            write_checkpoint(folder, self.checkpoint)
        with atomic_path(folder / "embeddings.pt") as path:
            save_torch(self.embeddings.detach().cpu().contiguous(), path)
        rows = io.StringIO()
        writer = csv.writer(rows, lineterminator="\n")
        writer.writerow(("epoch", "loss"))
        writer.writerows((epoch, repr(loss)) for epoch, loss in enumerate(self.losses, 1))
        write_text_atomic(folder / "losses.csv", rows.getvalue())
        plot_losses(self.losses, folder / "losses.png", f"seed {self.seed}")
        return folder


@torch.no_grad()
def embed(
    model: torch.nn.Module, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None
) -> Tensor:
    """``model``'s embeddings of the graph ``(x, edge_index[, edge_weight])``, the one way
    to embed with what was trained (``result.embed``, the module :func:`load_encoder`
    returns, ``cl2gnn embed``): the graph checked as training checks it
    (:func:`~cl2gnn.node.inputs.check_graph`), ``model`` in eval mode on its device, no
    gradient; returned on ``x``'s device."""
    check_graph(Data(x=x, edge_index=edge_index, edge_weight=edge_weight))
    device = next(iter(model.parameters()), x).device
    was_training = model.training
    model.eval()
    try:
        if edge_weight is None:
            out = model(x.to(device), edge_index.to(device))
        else:
            out = model(x.to(device), edge_index.to(device), edge_weight=edge_weight.to(device))
    finally:
        model.train(was_training)
    return out.to(x.device)


def encoder_checkpoint(
    model: torch.nn.Module,
    method: NodeMethod,
    config: NodeConfig | None,
    transform: BaseTransform | None = None,
) -> dict:
    """The embedding module ``model`` (``method``'s :meth:`~cl2gnn.node.NodeMethod.
    embedding_model`) as plain values: its weights, the built-in encoder with its
    constructor's arguments, any other encoder with its class's name (to read, never to
    import), what the method's embedding model holds besides the encoder
    (:meth:`~cl2gnn.node.NodeMethod.embedding_spec`, for its method to rebuild), and whether
    the run row-normalised the features before the module read them (``transform``,
    :func:`~cl2gnn.node.encoders.user.feature_transform`), which :func:`load_encoder` applies
    again."""
    if transform is not None and not isinstance(transform, NormalizeFeatures):
        raise ValueError(f"transform: a run applies NormalizeFeatures or nothing, got {transform}")
    encoder = method.encoder
    builtin = isinstance(encoder, GraphEncoder)
    cls = type(encoder)
    spec = method.embedding_spec()
    return {
        "format": FORMAT,
        "version": VERSION,
        "builtin": builtin,
        "spec": encoder.spec if builtin else None,
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "embedding": None if spec is None else {"method": method.name, "spec": spec},
        "normalize_features": transform is not None,
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "method": getattr(method, "label", method.name),
        "config": None if config is None else config.as_dict(),
    }


def read_checkpoint(path: str | Path) -> dict:
    """The encoder checkpoint at ``path`` (an ``encoder.pt``, or the folder holding one),
    loaded with ``weights_only=True`` and its entries checked
    (:func:`~cl2gnn.node.encoders.spec.check_saved_encoder`: the arguments bounded, the
    weights finite); ``ValueError`` naming the file if it is none of cl2gnn's, would need
    code run to load, or asks for what no flag may."""
    path = Path(path)
    if path.is_dir():
        path = path / "encoder.pt"
    checkpoint = load_file(path, "checkpoint (an encoder.pt, or its folder)")
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        raise ValueError(f"{path}: not a cl2gnn node encoder checkpoint")
    if checkpoint.get("version") != VERSION:
        raise ValueError(
            f"{path}: checkpoint version {checkpoint.get('version')!r}, this cl2gnn reads "
            f"version {VERSION}"
        )
    try:  # bounded as the flags are, finite: before anything is built from it
        checked = check_saved_encoder(checkpoint)
        checked["embedding"] = check_saved_embedding(checkpoint.get("embedding"))
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    return checked


def check_saved_embedding(embedding: object) -> dict | None:
    """A saved embedding model's entry, ``{"method": name, "spec": arguments}``: a method of
    this cl2gnn, its arguments the ones its method checks
    (:attr:`~cl2gnn.node.NodeMethod.embedding_spec_checks`), each within bounds."""
    if embedding is None:
        return None
    method = embedding.get("method") if isinstance(embedding, dict) else None
    if method not in REGISTRY:
        raise ValueError(f"embedding: names no method of this cl2gnn ({method!r})")
    checks = REGISTRY[method].embedding_spec_checks
    spec = check_saved_spec(embedding.get("spec"), checks, "embedding.spec")
    return {"method": method, "spec": spec}


def load_encoder(
    path: str | Path,
    device: str | torch.device = "cpu",
    *,
    encoder: torch.nn.Module | None = None,
) -> torch.nn.Module:
    """The embedding module saved at ``path`` (a ``seed_<k>`` folder of ``cl2gnn node
    --save`` or :meth:`TrainResult.save`, or its ``encoder.pt``), in eval mode, called as
    ``model(x, edge_index)`` on the raw features of any graph with the same feature width
    (:func:`embed`): on the training graph, the run's embeddings bit for bit. The built-in
    encoder is rebuilt from the file; a module of your own was saved as its state dict:
    pass a new one, ``encoder=YourEncoder(...)``, to load it into (MVGRL's diffusion encoder
    is a copy of it). Where the run row-normalised the features before your encoder read
    them, the module returned does too (:class:`~cl2gnn.node.encoders.user.NormalizedInput`,
    your encoder as its ``module``): what ``result.embed`` computes."""
    checkpoint = read_checkpoint(path)
    if checkpoint["builtin"] and encoder is not None:
        raise ValueError(f"encoder: {path} holds the built-in encoder, built from its file")
    if not checkpoint["builtin"] and encoder is None:
        raise ValueError(
            f"{path}: holds the weights of your own encoder ({checkpoint['class']}); pass a "
            "new one to load them into: load_encoder(path, encoder=YourEncoder(...))"
        )
    if encoder is None:
        encoder = GraphEncoder(**checkpoint["spec"])
    model = encoder
    embedding = checkpoint["embedding"]
    if embedding is not None:  # the method's own embedding model around the encoder
        model = REGISTRY[embedding["method"]].embedding_model_of(encoder, embedding["spec"])
    try:
        model.load_state_dict(checkpoint["state_dict"])
    except RuntimeError as error:
        raise ValueError(f"{path}: its weights do not fit: {first_line(error)}") from None
    if checkpoint.get("normalize_features"):
        model = NormalizedInput(model)
    return model.to(device).eval()


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
