"""Mini-batch training of the node encoder on sampled neighborhoods, in one process or in
several (``torchrun``); the seeds of each batch come from :mod:`.sampler`, the embeddings
from layer-wise inference (:mod:`.inference`).

Each step takes a batch of seed nodes, samples their neighborhoods (PyG's
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
(one generator seeded alike on all), so with complete neighborhoods (``num_neighbors`` all
``-1``) and without edge dropping or node masking the ranks' step equals one process's step
on the same global batches, feature masking included. The neighbor samples, the dropped
edges and the masked nodes of a rank's own seeds come from the rank's own stream (seeded from
the run's seed and the rank): they differ from one process's draws, so with those the
several processes make a step of the same distribution, not the same step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.data import Data

from ..._checks import integer
from ..._validation import without_value_checks
from ...distributed import rank_and_world
from ...distributed.launch import stream_seed
from ...graphs import neighbor_loader
from ..config import NodeConfig
from ..encoders.features import is_sparse, prepare_features
from ..encoders.propagation import ValuedGraph, ViewGraphs, first_rows
from ..encoders.user import checked_output
from ..methods import ViewBatch
from .inference import full_neighborhood, layerwise_embeddings
from .sampler import SeedBatches
from .trainer import Trainer

# the keys of the run's random streams (stream_seed(seed, key, ...)): the feature-column masks,
# the same on every rank, and each rank's own stream (neighbor samples, dropped edges)
FEATURE_MASK_STREAM, RANK_STREAM = 0, 1


def layer_rows(edges: Tensor, seeds: int, layers: int) -> list[int]:
    """The rows each of ``layers`` encoder layers must output for the first ``seeds`` nodes
    of a sampled subgraph (PyG's ``trim_to_layer``), first layer first: the last layer the
    seeds, each layer before it the rows the next one reads, the sources of their in-edges
    in ``edges`` (the un-augmented sample, which holds every view's edges; the sampler
    lists the seeds first, then the nodes each hop adds)."""
    reach = [seeds]  # rows kept by the last layer, the one before it, …
    for _ in range(layers - 1):
        into = edges[0][edges[1] < reach[-1]]
        reach.append(max(reach[-1], int(into.max()) + 1) if into.numel() else reach[-1])
    return reach[::-1]


def trimmed(graph: Tensor, rows: list[int]) -> tuple[Tensor, ...]:
    """A sampled subgraph's propagation graph (CSR) for each encoder layer, trimmed to the
    ``rows`` it outputs (:func:`layer_rows`), each reading the rows the one before kept. The
    seeds' rows are those of the untrimmed forward."""
    if isinstance(graph, ValuedGraph):
        graph = graph.to_sparse_csr()
    columns = [graph.size(1), *rows[:-1]]
    return tuple(first_rows(graph, r, c) for r, c in zip(rows, columns, strict=True))


class MinibatchTrainer(Trainer):
    """:class:`~cl2gnn.node.training.trainer.Trainer` on mini-batches: the neighbor loader over this
    rank's :class:`SeedBatches`, the encoder and method under DDP in a process group, and
    the sampler for layer-wise inference.

    :meth:`step` trains on one sampled batch, :meth:`epoch` one pass over the seeds (or its
    first ``max_steps`` steps); :meth:`embed` gives the embeddings of every node: the
    built-in encoder's by layer-wise inference (equal to its full-graph forward), any other
    encoder's by one full-graph forward. The sampler takes one hop per layer of the encoder
    (:func:`~cl2gnn.node.training.plan.sampled_hops`).
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
        integer(1)(config.batch_size, "batch_size")
        n = data.num_nodes
        # a batch's seeds are its negatives: no sampled keys; under torchrun they span ranks
        distributed = config.distributed if world > 1 else None
        # the column masks: one stream alike on every rank; the rank's neighbor samples and
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
        self.batches = SeedBatches(
            n,
            config.batch_size,
            rank=rank,
            world_size=world,
            seed=seed,
            min_share=self.method.min_batch_size,
            user=f"method {self.label!r}",
        )
        self.world = world
        x = self.encoder.normalize(data.x) if self.builtin else self.features(data)
        self.x = x.to(torch.get_default_dtype())  # float64 where it is the default
        self.edge_index = data.edge_index
        self.sparse = is_sparse(self.x)
        if world > 1:
            self.model = DistributedDataParallel(self.method)
        torch.manual_seed(stream_seed(seed, RANK_STREAM, rank))
        graph = Data(x=self.x, edge_index=data.edge_index, num_nodes=n)
        self.loader = neighbor_loader(graph, self.plan.fan_outs, batch_sampler=self.batches)
        self.steps_per_epoch = len(self.batches)
        if self.builtin:
            self.one_hop = full_neighborhood(self.loader.node_sampler)
        if self.builtin:
            self.degree = self.encoder.degree(data.edge_index, n)
        # the layers on rows that cannot reach the seeds are skipped where nothing else reads
        # them: GRACE's scheme reads the seeds' rows alone, and batch norm's statistics
        # would change (GAT's edge lists are not trimmed)
        self.trim = (
            self.builtin
            and self.method.reads_seed_rows_only
            and not config.batch_norm
            and self.encoder.kind != "gat"
        )

    def generators(self) -> dict[str, torch.Generator]:
        """The feature masks' generator and the seeds' permutations' (:class:`SeedBatches`)."""
        return super().generators() | {"seed_batches": self.batches.generator}

    def step(self, batch: Data) -> Tensor:
        """One optimiser step on a sampled batch; returns the loss (this rank's value)."""
        device, seeds = self.device, batch.batch_size
        x = batch.x.to(device)
        edges = batch.edge_index.to(device)
        prepared = prepare_features(x, self.sparse) if self.builtin else x
        graphs = self.view_graphs(batch.n_id, edges, seeds) if self.builtin else None
        views = [self.view_input(view, x, prepared, edges, graphs) for view in self.method.views]
        with without_value_checks():  # the inputs were checked where they entered
            loss = self.model(ViewBatch(views, edges, seeds))
        self.optimise(loss)
        return loss.detach()

    def view_graphs(self, nodes: Tensor, edges: Tensor, seeds: int) -> ViewGraphs:
        """The propagation graphs of the views of a sampled subgraph (global ids ``nodes``,
        sampled ``edges``), normalised by the whole graph's degrees less the edges a view
        dropped: layer-wise inference's normalisation (the whole graph's degrees), so that a
        node at the subgraph's edge, which has few or no in-edges in it, weighs its messages
        as it does there (an edge that was not sampled counts as kept); trimmed per layer
        (:func:`trimmed`) where the method reads the seeds alone."""
        degree = None if self.degree is None else self.degree[nodes].to(edges.device)
        finish = None
        if self.trim:
            rows = layer_rows(edges, seeds, self.encoder.num_layers)
            finish = functools.partial(trimmed, rows=rows)
        return ViewGraphs(self.encoder, edges, nodes.numel(), degree=degree, finish=finish)

    def epoch(self, max_steps: int | None = None) -> Tensor:
        """One pass over the seed nodes (the first ``max_steps >= 1`` steps of it, if given);
        returns the mean global-batch loss (on the device)."""
        if max_steps is not None:
            integer(1)(max_steps, "max_steps")
        total, steps = torch.zeros((), dtype=torch.float64, device=self.device), 0
        for batch in self.loader:
            if steps == max_steps:
                break
            total += self.step(batch)  # on the device: no wait for it per step
            steps += 1
        if self.world > 1:  # each rank returned world_size × its share: the mean is global
            dist.all_reduce(total)
            total /= self.world
        return total / steps

    @torch.no_grad()
    def embed(self) -> Tensor:
        """Every node's embedding as the model computes it on the whole graph: the built-in
        encoder's by :func:`layerwise_embeddings` (in bounded memory, equal to its
        full-graph forward), any other encoder's by one forward on the whole graph. A
        layer-wise inference needs to know the encoder's layers, which an encoder of one's
        own does not say (PyG's ``BasicGNN.inference`` is not its forward where its layers
        normalise by the sampled subgraph's degrees, as its GCN does)."""
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
            out = encoder(self.x.to(self.device), self.edge_index.to(self.device))
        encoder.train(was_training)
        return checked_output(out, self.x).cpu()
