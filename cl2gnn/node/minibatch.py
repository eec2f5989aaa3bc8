"""Mini-batch training of the node encoder on sampled neighbourhoods, in one process or in
several (``torchrun``), and layer-wise inference of the embeddings in bounded memory.

Each step takes a batch of seed nodes, samples their neighbourhoods (PyG's
``NeighborLoader``, or :class:`~cl2gnn.graphs.TorchNeighborSampler` where its backends are
missing), makes two augmented views of the sampled subgraph (the full-batch views:
``dropout_edge``, ``mask_feature``) and applies the objective to the seeds' rows of both
views: the other seeds of the batch are the negatives. Under a process group every rank
takes its share of each global batch, the encoder's gradients are averaged by DDP and the
negatives span every rank's seeds (:mod:`cl2gnn.distributed`), so that the step equals one
process's step on the union of the seeds.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel
from torch.optim.swa_utils import AveragedModel
from torch_geometric.data import Data
from torch_geometric.sampler import BaseSampler, NodeSamplerInput
from tqdm.auto import tqdm

from .._validation import check_integer
from ..distributed import gather_rows, rank_and_world, shard_of
from ..graphs import neighbor_loader
from .config import NodeConfig
from .features import is_sparse, prepare_features
from .methods import NodeObjective
from .models import GraphEncoder, ProjectionHead, read_out
from .names import BATCH_METHODS, DISTRIBUTED_METHODS


class SeedBatches(torch.utils.data.Sampler):
    """The seed nodes of one process's batches (a ``batch_sampler`` for the loaders).

    Every epoch draws a permutation of the ``num_seeds`` seeds from a generator seeded with
    ``seed`` (the same permutation on every rank), cuts it into global batches of
    ``batch_size`` and gives this rank its share of each (:func:`torch.tensor_split`:
    shares differ by at most one seed). A last global batch too small to give every rank
    a seed joins the batch before it. Each seed is in one batch of one rank per epoch.

    Args:
        num_seeds (int): the seeds are ``0 … num_seeds - 1`` (indices of the loader's
            input nodes).
        batch_size (int): seeds per global batch, over all ranks.
        rank (int, optional): this process's rank (default: ``0``).
        world_size (int, optional): the number of processes (default: ``1``).
        seed (int, optional): seeds the permutations (default: ``0``).
    """

    def __init__(
        self, num_seeds: int, batch_size: int, *, rank: int = 0, world_size: int = 1, seed: int = 0
    ) -> None:
        check_integer(num_seeds, "num_seeds", 1)
        check_integer(batch_size, "batch_size", 1)
        check_integer(world_size, "world_size", 1)
        check_integer(rank, "rank", 0, world_size - 1)
        if world_size > num_seeds:
            raise ValueError(
                f"{world_size} processes but {num_seeds} seed nodes: every process needs at "
                "least one"
            )
        if batch_size < world_size:
            raise ValueError(
                f"batch_size {batch_size} is smaller than the {world_size} processes: every "
                "process needs a seed in every batch"
            )
        self.num_seeds, self.batch_size = num_seeds, batch_size
        self.rank, self.world_size = rank, world_size
        self.generator = torch.Generator().manual_seed(seed)

    def global_batches(self) -> list[Tensor]:
        """The next epoch's global batches (advances the generator)."""
        order = torch.randperm(self.num_seeds, generator=self.generator)
        batches = list(order.split(self.batch_size))
        if len(batches) > 1 and batches[-1].numel() < self.world_size:
            batches[-2:] = [torch.cat(batches[-2:])]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.global_batches():
            yield batch.tensor_split(self.world_size)[self.rank].tolist()

    def __len__(self) -> int:
        full, rest = divmod(self.num_seeds, self.batch_size)
        if rest == 0:
            return full
        return full if full and rest < self.world_size else full + 1


def check_num_neighbors(num_neighbors: tuple[int, ...] | list[int], layers: int = 2) -> None:
    """One fan-out per encoder layer, each ``>= 1`` or ``-1`` (all in-neighbours)."""
    if len(num_neighbors) != layers:
        raise ValueError(
            f"num_neighbors needs one fan-out per encoder layer ({layers}), "
            f"got {list(num_neighbors)}"
        )
    for hop, count in enumerate(num_neighbors):
        check_integer(count, f"num_neighbors[{hop}]", -1)
        if count == 0:
            raise ValueError(f"num_neighbors[{hop}] must be >= 1 or -1 (all), got 0")


class TwoViews(torch.nn.Module):
    """Encoder and head on the two views of a sampled subgraph, one call (so that DDP
    sees a single forward per step); returns ``z1, z2, h1, h2`` of the seed rows."""

    def __init__(self, encoder: GraphEncoder, head: ProjectionHead) -> None:
        super().__init__()
        self.encoder, self.head = encoder, head

    def forward(self, views: list[tuple[Tensor, Tensor]], seeds: int) -> tuple[Tensor, ...]:
        h = []
        for x, edge_index in views:
            graph = self.encoder.propagation_graph(edge_index, x.size(0))
            h.append(self.encoder(x, graph)[:seeds])
        return self.head(h[0]), self.head(h[1]), h[0], h[1]


def full_neighbourhood(sampler: BaseSampler) -> BaseSampler:
    """A copy of a neighbour sampler that takes every in-neighbour in one hop, sharing the
    graph's CSC tensors (no second copy of the graph)."""
    one_hop = copy.copy(sampler)
    one_hop.num_neighbors = [-1]
    return one_hop


@torch.no_grad()
def layerwise_embeddings(
    encoder: GraphEncoder,
    x: Tensor,
    sampler: BaseSampler,
    degree: Tensor | None,
    batch_size: int,
    readout: str = "last",
    device: str | torch.device = "cpu",
) -> Tensor:
    """The encoder's output on the whole graph, layer by layer: each layer for batches of
    ``batch_size`` target nodes on their complete in-neighbourhoods (``sampler`` from
    :func:`full_neighbourhood`), with the whole graph's ``degree`` (from
    :meth:`~cl2gnn.node.models.GraphEncoder.degree`) in the normalisation —
    so every row equals the full-graph forward's, and the memory is that of one layer's
    output for all nodes plus one batch's neighbourhood. Under a process group each rank
    computes an equal share of the rows and the layers are all-gathered."""
    rank, world = rank_and_world()
    mine = torch.arange(x.size(0)).tensor_split(world)[rank]
    sparse = is_sparse(x)
    h, outputs = x, []
    for index in (0, 1):
        out = None
        for start in range(0, mine.numel(), batch_size):
            targets = mine[start : start + batch_size]
            sub = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=targets))
            edges = torch.stack([sub.row, sub.col]).to(device)
            sub_degree = None if degree is None else degree[sub.node].to(device)
            graph = encoder.propagation_graph(edges, sub.node.numel(), sub_degree)
            inputs = h[sub.node].to(device)
            inputs = prepare_features(inputs, sparse) if index == 0 else inputs
            rows = encoder.layer(index, inputs, graph)[: targets.numel()].cpu()
            if out is None:
                out = rows.new_empty(mine.numel(), rows.size(1))
            out[start : start + targets.numel()] = rows
        if world > 1:  # on the device: NCCL gathers CUDA tensors only
            out = out.to(device)
            out = gather_rows(out, shard_of(out), grad=False).cpu()
        outputs.append(out)
        h = out
    return read_out(x, outputs[0], outputs[1], readout)


class MinibatchTrainer:
    """The state of one mini-batch training run: the encoder and head (under DDP in a
    process group), the objective, the optimiser, the neighbour loader over this rank's
    :class:`SeedBatches` and the sampler for layer-wise inference.

    :meth:`epoch` trains one pass over the seeds (or its first ``max_steps`` steps);
    :meth:`embed` gives the embeddings of every node. :func:`train_minibatch` drives it the
    way :func:`~cl2gnn.node.train_node_model` drives full-batch training.
    """

    def __init__(
        self,
        data: Data,
        method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
        config: NodeConfig,
        seed: int = 0,
        device: str | torch.device = "cpu",
    ) -> None:
        from .train import seed_everything

        rank, world = rank_and_world()
        name = method if isinstance(method, str) else None
        if name is not None and name not in BATCH_METHODS:
            raise ValueError(
                f"method {name!r} keeps a state per node or uses the whole graph's edges as "
                f"positives: mini-batch training takes the methods {BATCH_METHODS}"
            )
        if world > 1 and name not in DISTRIBUTED_METHODS:
            raise ValueError(
                f"method {name or 'a callable'!r} has no negatives across processes: under "
                f"torchrun use one of {DISTRIBUTED_METHODS}"
            )
        check_num_neighbors(config.num_neighbors)
        n = data.num_nodes
        self.batches = SeedBatches(n, config.batch_size, rank=rank, world_size=world, seed=seed)
        self.config, self.device, self.world = config, device, world
        self.label = name or getattr(method, "__name__", type(method).__name__)
        seed_everything(seed)  # the same initial weights on every rank
        x = data.x.float()
        if config.normalize_features:  # NormalizeFeatures' rule, without copying the edges
            x = x / x.sum(1, keepdim=True).clamp(min=1)
        self.x, self.sparse = x, is_sparse(x)
        self.encoder = GraphEncoder(x.size(1), config.hidden, config.activation, config.encoder)
        model = TwoViews(self.encoder, ProjectionHead(config.hidden, config.proj_hidden))
        model = model.to(device)
        if name is None:
            self.objective = method
        else:
            self.objective = NodeObjective(
                name,
                n,
                config.hidden,
                config.tau,  # a batch's seeds are its negatives: no sampled keys
                distributed=config.distributed if world > 1 else None,
            ).to(device)
        trainable = [model]
        if isinstance(self.objective, torch.nn.Module):
            trainable.append(self.objective)
        params = [p for module in trainable for p in module.parameters()]
        self.optimizer = torch.optim.Adam(
            params, lr=config.learning_rate, weight_decay=config.weight_decay
        )
        self.model = DistributedDataParallel(model) if world > 1 else model
        if world > 1:  # each rank its own neighbour samples and augmentations
            torch.manual_seed(seed * 7919 + rank)
        graph = Data(x=x, edge_index=data.edge_index, num_nodes=n)
        self.loader = neighbor_loader(graph, config.num_neighbors, batch_sampler=self.batches)
        self.one_hop = full_neighbourhood(self.loader.node_sampler)
        self.degree = self.encoder.degree(data.edge_index, n)

    def step(self, batch: Data) -> Tensor:
        """One optimiser step on a sampled batch; returns the loss (this rank's value)."""
        from .train import augment

        config, device = self.config, self.device
        x = prepare_features(batch.x.to(device), self.sparse)
        edges = batch.edge_index.to(device)
        views = [augment(x, edges, *config.view_probabilities(v)) for v in (0, 1)]
        loss = self.objective(*self.model(views, batch.batch_size))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def epoch(self, max_steps: int | None = None) -> float:
        """One pass over the seed nodes (the first ``max_steps`` steps of it, if given);
        returns the mean global-batch loss."""
        total, steps = torch.zeros((), dtype=torch.float64, device=self.device), 0
        for batch in self.loader:
            if steps == max_steps:
                break
            total += self.step(batch)  # on the device: no wait for it per step
            steps += 1
        if self.world > 1:  # each rank returned world_size × its share: the mean is global
            dist.all_reduce(total)
            total /= self.world
        return float(total) / steps

    def embed(self, encoder: GraphEncoder | None = None) -> Tensor:
        """Every node's embedding (``config.embedding``) by :func:`layerwise_embeddings`,
        with ``encoder`` (default: the trained one)."""
        encoder = encoder or self.encoder
        was_training = encoder.training
        encoder.eval()
        config = self.config
        out = layerwise_embeddings(
            encoder,
            self.x,
            self.one_hop,
            self.degree,
            config.batch_size,
            config.embedding,
            self.device,
        )
        encoder.train(was_training)
        return out


def train_minibatch(
    data: Data,
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
    config: NodeConfig,
    seed: int,
    device: str | torch.device,
    progress: bool,
    snapshot_every: int,
):
    """:func:`~cl2gnn.node.train_node_model` with ``config.batch_size`` set (see the module
    docstring). Returns its :class:`~cl2gnn.node.train.TrainResult`; ``losses`` are each
    epoch's mean global-batch loss."""
    from .train import TrainResult

    trainer = MinibatchTrainer(data, method, config, seed, device)
    averaged = AveragedModel(trainer.encoder) if config.swa_start is not None else None

    def embed() -> Tensor:
        use_mean = averaged is not None and averaged.n_averaged
        return trainer.embed(averaged.module if use_mean else None)

    losses, seconds, snapshots = [], [], {}
    bar = tqdm(range(config.epochs), desc=f"{trainer.label} seed {seed}", disable=not progress)
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
    epoch_ms = 1000.0 * float(np.mean(warm)) if warm else 0.0
    final = snapshots[config.epochs] if config.epochs in snapshots else embed()
    return TrainResult(final, losses, epoch_ms, snapshots)
