"""Self-supervised training of a graph encoder on two augmented views per step."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor
from torch.optim.swa_utils import AveragedModel
from torch_geometric.data import Data
from torch_geometric.transforms import NormalizeFeatures
from torch_geometric.utils import dropout_edge, mask_feature
from tqdm.auto import tqdm

from .._validation import check_integer
from .config import NodeConfig
from .features import SparseFeatures, prepare_features
from .methods import NodeObjective
from .models import GraphEncoder, ProjectionHead
from .names import EMBEDDINGS


@dataclass
class TrainResult:
    embeddings: Tensor  # frozen encoder output on the clean graph, [N, hidden]
    losses: list[float] = field(default_factory=list)
    epoch_ms: float = 0.0  # mean wall time of one training epoch
    snapshots: dict[int, Tensor] = field(default_factory=dict)  # epoch -> embeddings


def augment(
    x: Tensor | SparseFeatures,
    edge_index: Tensor,
    p_edge: float,
    p_feature: float,
    p_node: float = 0.0,
):
    """One GRACE view: drop edges (PyG ``dropout_edge``) and mask feature columns (PyG
    ``mask_feature``; for :class:`SparseFeatures` the same column mask, applied to the
    first layer's weight); ``p_node > 0`` also zeroes that fraction of the nodes' whole
    feature rows (GraphMAE's node masking, here a view to contrast)."""
    # the sparse path draws its own masks, so it does not get mask_feature's range check
    for name, p in (("feature mask", p_feature), ("node mask", p_node)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"the {name} probability must lie in [0, 1], got {p}")
    edge_index, _ = dropout_edge(edge_index, p=p_edge)
    if isinstance(x, SparseFeatures):
        dtype, device = x.values.dtype, x.values.device
        x = x.with_column_mask((torch.rand(x.size(1), device=device) >= p_feature).to(dtype))
        if p_node > 0:
            x = x.with_row_mask((torch.rand(x.size(0), device=device) >= p_node).to(dtype))
        return x, edge_index
    x, _ = mask_feature(x, p=p_feature, mode="col")
    if p_node > 0:
        x, _ = mask_feature(x, p=p_node, mode="row")
    return x, edge_index


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)  # noqa: NPY002 -- seeds libraries that use the legacy global RNG


def train_node_model(
    data: Data,
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
    config: NodeConfig,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = True,
    snapshot_every: int = 0,
) -> TrainResult:
    """Train GRACE's encoder and head on two augmented views per epoch with ``method``: a
    name from :data:`~cl2gnn.node.METHODS`, or any callable ``(z1, z2, h1, h2) -> loss``
    of the projections and encoder outputs (e.g. a baseline to compare against; the
    parameters of a ``torch.nn.Module`` objective are trained with the encoder).
    ``snapshot_every > 0`` also keeps the embeddings after every that many epochs (to
    choose a training length on validation nodes). With ``config.epochs == 0`` the
    embeddings are the encoder's at its seeded initialisation (a baseline).

    ``config.batch_size`` trains on mini-batches of seed nodes and their sampled
    neighbourhoods instead (:mod:`cl2gnn.node.minibatch`), in one process or, under
    ``torchrun``, across the process group."""
    if snapshot_every < 0:
        raise ValueError(f"snapshot_every must be >= 0, got {snapshot_every}")
    if config.embedding not in EMBEDDINGS:
        raise ValueError(f"embedding must be one of {EMBEDDINGS}, got {config.embedding!r}")
    swa_start = config.swa_start
    if swa_start is not None:
        check_integer(swa_start, "swa_start", 1, config.epochs)
    if config.batch_size is not None:  # sampled neighbourhoods, one process or several
        from .minibatch import train_minibatch

        return train_minibatch(data, method, config, seed, device, progress, snapshot_every)
    seed_everything(seed)
    if config.normalize_features:
        data = NormalizeFeatures()(data.clone())
    x, edge_index = prepare_features(data.x.to(device)), data.edge_index.to(device)
    n = data.num_nodes
    encoder = GraphEncoder(x.size(1), config.hidden, config.activation, config.encoder).to(device)
    head = ProjectionHead(config.hidden, config.proj_hidden).to(device)
    if callable(method):  # a user objective (z1, z2, h1, h2) -> loss
        objective, method = method, getattr(method, "__name__", type(method).__name__)
    else:
        objective = NodeObjective(
            method,
            n,
            config.hidden,
            config.tau,
            edge_index,
            config.neighbor_weight,
            num_keys=config.num_keys,
            clusters=config.clusters,
        )
    trainable = [encoder, head]
    if isinstance(objective, torch.nn.Module):
        trainable.append(objective.to(device))
    params = [p for module in trainable for p in module.parameters()]
    optimizer = torch.optim.Adam(params, lr=config.learning_rate, weight_decay=config.weight_decay)

    # stochastic weight averaging: from epoch ``swa_start`` on, embed with the mean weights
    averaged = AveragedModel(encoder) if swa_start is not None else None

    def embed() -> Tensor:  # the frozen encoder on the clean graph
        model = averaged.module if averaged is not None and averaged.n_averaged else encoder
        model.eval()
        with torch.no_grad():
            graph = model.propagation_graph(edge_index, n)
            return model(x, graph, readout=config.embedding).cpu()

    losses, seconds, snapshots = [], [], {}
    bar = tqdm(range(config.epochs), desc=f"{method} seed {seed}", disable=not progress)
    for epoch in bar:
        start = time.perf_counter()
        encoder.train()
        x1, e1 = augment(x, edge_index, *config.view_probabilities(0))
        x2, e2 = augment(x, edge_index, *config.view_probabilities(1))
        h1 = encoder(x1, encoder.propagation_graph(e1, n))
        h2 = encoder(x2, encoder.propagation_graph(e2, n))
        loss = objective(head(h1), head(h2), h1, h2)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))  # waits for the device: the epoch's work is done
        seconds.append(time.perf_counter() - start)
        if averaged is not None and epoch + 1 >= swa_start:
            averaged.update_parameters(encoder)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if snapshot_every and (epoch + 1) % snapshot_every == 0:
            snapshots[epoch + 1] = embed()
    warm = seconds[1:] if len(seconds) > 1 else seconds  # the first epoch pays one-off costs
    epoch_ms = 1000.0 * float(np.mean(warm)) if warm else 0.0  # epochs=0: the untrained encoder
    final = snapshots[config.epochs] if config.epochs in snapshots else embed()
    return TrainResult(final, losses, epoch_ms, snapshots)
