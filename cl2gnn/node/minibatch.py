"""Mini-batch training of the node encoder on sampled neighbourhoods, in one process or in
several (``torchrun``), and layer-wise inference of the embeddings in bounded memory.

Each step takes a batch of seed nodes, samples their neighbourhoods (PyG's
``NeighborLoader``, or :class:`~cl2gnn.graphs.TorchNeighborSampler` where its backends are
missing), makes two augmented views of the sampled subgraph (the full-batch views:
``dropout_edge``, ``mask_feature``) and applies the objective to the seeds' rows of both
views: the other seeds of the batch are the negatives. The propagation graph of a view
normalises by the whole graph's degrees less the view's dropped edges, as layer-wise
inference does (by the whole graph's): the nodes at a sampled subgraph's edge have few or no
in-edges in it, and normalising by the subgraph's degrees would weigh their messages
differently in training and in inference.

Under a process group every rank takes its share of each global batch, the encoder's
gradients are averaged by DDP and the negatives span every rank's seeds
(:mod:`cl2gnn.distributed`). What is equal to one process's step on the union of the seeds,
and what is not: the feature-column masks of a global batch are drawn the same on every rank
(one generator seeded alike on all), so with complete neighbourhoods (``num_neighbors`` all
``-1``) and without edge dropping or node masking the ranks' step equals one process's step
on the same global batches, feature masking included. The neighbour samples, the dropped
edges and the masked nodes of a rank's own seeds come from the rank's own stream (seeded from
the run's seed and the rank): they differ from one process's draws, so with those the
several processes make a step of the same distribution, not the same step.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator

import torch
import torch.distributed as dist
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.data import Data
from torch_geometric.sampler import BaseSampler

from .._validation import check_integer
from ..distributed import gather_rows, rank_and_world, shard_of
from ..distributed.launch import stream_seed
from ..graphs import neighbor_loader
from .config import NodeConfig
from .features import is_sparse, prepare_features
from .methods import ViewBatch
from .methods.contrastive import ContrastiveMethod
from .models import GraphEncoder, first_rows, read_out
from .trainer import Trainer

# the keys of the run's random streams (stream_seed(seed, key, ...)): the feature-column masks,
# the same on every rank, and each rank's own stream (neighbour samples, dropped edges)
FEATURE_MASK_STREAM, RANK_STREAM = 0, 1


class SeedBatches(torch.utils.data.Sampler):
    """The seed nodes of one process's batches (a ``batch_sampler`` for the loaders).

    Every epoch draws a permutation of the ``num_seeds`` seeds from a generator seeded with
    ``seed`` (the same permutation on every rank), cuts it into global batches of
    ``batch_size`` and gives this rank its share of each (:func:`torch.tensor_split`:
    shares differ by at most one seed). Every share holds at least ``min_share`` seeds (the
    smallest batch the method needs, :attr:`~cl2gnn.node.methods.NodeMethod.min_batch_size`):
    a last global batch too small for that joins the batch before it. Each seed is in one
    batch of one rank per epoch.

    Args:
        num_seeds (int): the seeds are ``0 … num_seeds - 1`` (indices of the loader's
            input nodes).
        batch_size (int): seeds per global batch, over all ranks.
        rank (int, optional): this process's rank (default: ``0``).
        world_size (int, optional): the number of processes (default: ``1``).
        seed (int, optional): seeds the permutations (default: ``0``).
        min_share (int, optional): the fewest seeds of a rank's share (default: ``1``).
    """

    def __init__(
        self,
        num_seeds: int,
        batch_size: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        min_share: int = 1,
    ) -> None:
        check_integer(num_seeds, "num_seeds", 1)
        check_integer(batch_size, "batch_size", 1)
        check_integer(world_size, "world_size", 1)
        check_integer(rank, "rank", 0, world_size - 1)
        check_integer(min_share, "min_share", 1)
        self.smallest = world_size * min_share  # the fewest seeds of a global batch
        processes = f"{world_size} process{'es' if world_size > 1 else ''}"
        each = f"every process needs at least {min_share} seed{'s' if min_share > 1 else ''}"
        if num_seeds < self.smallest:
            raise ValueError(f"{processes} but {num_seeds} seed nodes: {each}")
        if batch_size < self.smallest:
            raise ValueError(
                f"batch_size {batch_size} is too small for {processes}: {each} in every batch"
            )
        self.num_seeds, self.batch_size = num_seeds, batch_size
        self.rank, self.world_size, self.min_share = rank, world_size, min_share
        self.generator = torch.Generator().manual_seed(seed)

    def global_batches(self) -> list[Tensor]:
        """The next epoch's global batches (advances the generator)."""
        order = torch.randperm(self.num_seeds, generator=self.generator)
        batches = list(order.split(self.batch_size))
        if len(batches) > 1 and batches[-1].numel() < self.smallest:
            batches[-2:] = [torch.cat(batches[-2:])]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.global_batches():
            yield batch.tensor_split(self.world_size)[self.rank].tolist()

    def __len__(self) -> int:
        full, rest = divmod(self.num_seeds, self.batch_size)
        if rest == 0:
            return full
        return full if full and rest < self.smallest else full + 1


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
    """The encoder's output on the whole graph, layer by layer, at the cost of one
    full-graph forward: each layer's linear map once for every node (by batches of
    ``batch_size`` rows; :meth:`~cl2gnn.node.models.GraphEncoder.shared_map`), then the
    rows of ``batch_size`` target nodes at a time from their in-edges (the CSC graph
    ``sampler`` holds, e.g. the one of :func:`full_neighbourhood`) weighted by the whole
    graph's ``degree`` (from :meth:`~cl2gnn.node.models.GraphEncoder.degree`; GCN and
    GraphSAGE need it) — so every row equals the full-graph forward's, and the memory is
    that of the layer's input, its linear map and its output for all nodes. Where the map
    widens the features, the batch's propagated inputs are mapped instead (the same
    product, fewer columns to propagate). Under a process group each rank computes an
    equal share of the rows and they are all-gathered."""
    if degree is None and encoder.kind != "gat":
        raise ValueError(f"layer-wise {encoder.kind} inference needs the whole graph's degree")
    rank, world = rank_and_world()
    n = x.size(0)
    mine = torch.arange(n).tensor_split(world)[rank]  # a contiguous range of rows
    first, last = (int(mine[0]), int(mine[-1]) + 1) if mine.numel() else (0, 0)
    colptr, source_of = sampler.colptr, sampler.row
    on_cpu = torch.device(device).type == "cpu"
    sparse = is_sparse(x)

    def gathered(rows: Tensor) -> Tensor:
        if world > 1:  # on the device: NCCL gathers CUDA tensors only
            rows = gather_rows(rows.to(device), shard_of(rows), grad=False).cpu()
        return rows

    def by_rows(compute) -> Tensor:
        """``compute(start, end)`` for this rank's rows, by batches, into one tensor."""
        out = None
        for start in range(first, last, batch_size):
            rows = compute(start, min(start + batch_size, last)).cpu()
            if out is None:
                out = rows.new_empty(last - first, rows.size(1))
            out[start - first : start - first + rows.size(0)] = rows
        return gathered(out)

    h, outputs = x, []
    for index in range(encoder.num_layers):

        def inputs(start: int, end: int, h=h, index=index):
            rows = h[start:end].to(device)
            return prepare_features(rows, sparse) if index == 0 else rows

        def mapped(start: int, end: int, inputs=inputs, index=index):
            return encoder.shared_map(index, inputs(start, end))

        shared = by_rows(mapped) if encoder.maps_first(index, sparse) else None
        table = h if shared is None else shared

        def rows_of(start: int, end: int, shared=shared, table=table, index=index):
            ptr = colptr[start : end + 1]
            source = source_of[ptr[0] : ptr[-1]]
            ptr = ptr - ptr[0]
            weight, loop = encoder.propagation_rows(ptr, source, start, degree)
            sources = table
            if not on_cpu:  # the batch's sources only, relabelled
                nodes, source = source.unique(return_inverse=True)
                sources = table[nodes]
            with warnings.catch_warnings():  # torch's "sparse CSR is beta" notices
                warnings.simplefilter("ignore", UserWarning)
                adj = torch.sparse_csr_tensor(
                    ptr, source, weight, size=(end - start, sources.size(0))
                ).to(device)
            own = None if shared is None else shared[start:end].to(device)
            loop = None if loop is None else loop.to(device)
            return encoder.rows_output(
                index, sources.to(device), inputs(start, end), own, adj, loop
            )

        h = by_rows(rows_of)
        outputs.append(h)
    return read_out(x, outputs, readout)


def trimmed(graph: Tensor, edges: Tensor, seeds: int, layers: int) -> tuple[Tensor, ...]:
    """A sampled subgraph's propagation graph (CSR) for each of ``layers`` encoder layers,
    trimmed to the rows that reach the first ``seeds`` nodes (PyG's ``trim_to_layer`` on the
    CSR graph): the last layer for the seeds, each layer before it for the rows the next one
    reads, the sources of their in-edges in ``edges`` (the un-augmented sample, which holds
    every view's edges; the sampler lists the seeds first, then the nodes each hop adds).
    The seeds' rows are those of the untrimmed forward."""
    reach = [seeds]  # rows kept by the last layer, the one before it, …
    for _ in range(layers - 1):
        into = edges[0][edges[1] < reach[-1]]
        reach.append(max(reach[-1], int(into.max()) + 1) if into.numel() else reach[-1])
    columns = [graph.size(1), *reach[::-1][:-1]]  # each layer reads the rows the one before kept
    return tuple(
        first_rows(graph, rows, cols) for rows, cols in zip(reach[::-1], columns, strict=True)
    )


def check_batch_size(method, label: str, num_nodes: int, batch_size: int, world: int) -> int:
    """The seeds every rank's share of a batch needs for ``method`` (its
    :attr:`~cl2gnn.node.methods.NodeMethod.min_batch_size`); a graph or a ``batch_size`` too
    small for it on ``world`` processes is refused, naming the method (``label``)."""
    need = method.min_batch_size
    on = f"on {world} process{'es' if world > 1 else ''}"
    if num_nodes < world * need:
        raise ValueError(
            f"the graph's {num_nodes} nodes are too few for method {label!r} {on}: each "
            f"process needs at least {need} seeds per batch"
        )
    if batch_size < world * need:
        raise ValueError(
            f"batch_size {batch_size} is too small for method {label!r} {on}: each process's "
            f"share needs at least {need} seeds (batch_size >= {world * need})"
        )
    return need


class MinibatchTrainer(Trainer):
    """:class:`~cl2gnn.node.trainer.Trainer` on mini-batches: the neighbour loader over this
    rank's :class:`SeedBatches`, the encoder and method under DDP in a process group, and
    the sampler for layer-wise inference.

    :meth:`step` trains on one sampled batch, :meth:`epoch` one pass over the seeds (or its
    first ``max_steps`` steps); :meth:`embed` gives the embeddings of every node: the
    built-in encoder's by layer-wise inference (equal to its full-graph forward), any other
    encoder's by one full-graph forward. The sampler takes ``config.fan_outs()`` hops, one
    per layer of the encoder (``config.layers`` for a module of your own).
    """

    def __init__(
        self,
        data: Data,
        method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
        config: NodeConfig,
        *,
        seed: int = 0,
        device: str | torch.device = "cpu",
        **options,
    ) -> None:
        rank, world = rank_and_world()
        check_integer(config.batch_size, "batch_size", 1)
        if data.get("edge_weight") is not None:
            raise ValueError("data.edge_weight: mini-batch training samples no edge weights")
        n = data.num_nodes
        # a batch's seeds are its negatives: no sampled keys; under torchrun they span ranks
        distributed = config.distributed if world > 1 else None
        # the column masks: one stream alike on every rank; the rank's neighbour samples and
        # dropped edges: torch's generator, seeded per (seed, rank) (seed + rank would give
        # seed s on rank 1 the stream of seed s + 1 on rank 0)
        feature_masks = torch.Generator().manual_seed(stream_seed(seed, FEATURE_MASK_STREAM))
        super().__init__(  # the same initial weights on every rank
            data,
            method,
            config,
            seed=seed,
            device=device,
            distributed=distributed,
            mask_generator=feature_masks,
            **options,
        )
        need = check_batch_size(self.method, self.label, n, config.batch_size, world)
        self.batches = SeedBatches(
            n, config.batch_size, rank=rank, world_size=world, seed=seed, min_share=need
        )
        self.world = world
        x = self.encoder.normalize(data.x) if self.builtin else data.x
        self.x = x.to(torch.get_default_dtype())  # float64 where it is the default
        self.edge_index = data.edge_index
        self.sparse = is_sparse(self.x)
        if world > 1:
            self.model = DistributedDataParallel(self.model)
        torch.manual_seed(stream_seed(seed, RANK_STREAM, rank))
        graph = Data(x=self.x, edge_index=data.edge_index, num_nodes=n)
        self.loader = neighbor_loader(graph, config.fan_outs(), batch_sampler=self.batches)
        self.steps_per_epoch = len(self.batches)
        if self.builtin:
            self.one_hop = full_neighbourhood(self.loader.node_sampler)
            self.degree = self.encoder.degree(data.edge_index, n)
        # the layers on rows that cannot reach the seeds are skipped where nothing else reads
        # them: GRACE's scheme reads the seeds' rows alone, and batch norm's statistics
        # would change (GAT's edge lists are not trimmed)
        self.trim = (
            self.builtin
            and isinstance(self.method, ContrastiveMethod)
            and not config.batch_norm
            and config.encoder != "gat"
        )

    def step(self, batch: Data) -> Tensor:
        """One optimiser step on a sampled batch; returns the loss (this rank's value)."""
        device, seeds = self.device, batch.batch_size
        x = batch.x.to(device)
        edges = batch.edge_index.to(device)
        prepared = prepare_features(x, self.sparse) if self.builtin else x
        propagation = self._propagation(batch.n_id, edges, seeds) if self.builtin else None
        views = [self.view_input(view, x, prepared, edges, propagation) for view in self.views]
        loss = self.model(ViewBatch(views, edges, seeds))
        self.optimise(loss)
        return loss.detach()

    def _propagation(self, nodes: Tensor, edges: Tensor, seeds: int):
        """The propagation graph of a view of a sampled subgraph (global ids ``nodes``,
        sampled ``edges``) from the view's edges, normalised by the whole graph's degrees less
        the edges the view dropped: layer-wise inference's normalisation (the whole graph's
        degrees), so that a node at the subgraph's edge, which has few or no in-edges in it,
        weighs its messages as it does there (an edge that was not sampled counts as kept);
        trimmed per layer (:func:`trimmed`) where the method reads the seeds alone."""
        encoder, n = self.encoder, nodes.numel()
        whole = None
        if self.degree is not None:  # GAT: no normalisation by degree
            whole = self.degree[nodes].to(edges.device) - encoder.degree(edges, n)

        def propagation(view_edges: Tensor, _: Tensor | None) -> Tensor | tuple[Tensor, ...]:
            degree = None if whole is None else whole + encoder.degree(view_edges, n)
            graph = encoder.propagation_graph(view_edges, n, degree)
            return trimmed(graph, edges, seeds, encoder.num_layers) if self.trim else graph

        return propagation

    def epoch(self, max_steps: int | None = None) -> float:
        """One pass over the seed nodes (the first ``max_steps >= 1`` steps of it, if given);
        returns the mean global-batch loss."""
        if max_steps is not None:
            check_integer(max_steps, "max_steps", 1)
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

    @torch.no_grad()
    def embed(self) -> Tensor:
        """Every node's embedding: the built-in encoder's by :func:`layerwise_embeddings`
        (in bounded memory), any other encoder's by one forward on the whole graph."""
        encoder = self.encoder
        was_training = encoder.training
        encoder.eval()
        if self.builtin:
            out = layerwise_embeddings(
                encoder,
                self.x,
                self.one_hop,
                self.degree,
                self.config.batch_size,
                encoder.readout,
                self.device,
            )
        else:
            out = encoder(self.x.to(self.device), self.edge_index.to(self.device)).cpu()
        encoder.train(was_training)
        return out
