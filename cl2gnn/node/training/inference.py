"""Layer-wise inference: the built-in encoder's embeddings of every node in the memory of
one layer, equal to its full-graph forward, in one process or shared among ranks."""

from __future__ import annotations

import copy
import warnings

import torch
from torch import Tensor
from torch_geometric.sampler import BaseSampler

from ...distributed import gather_rows, rank_and_world, shard_of
from ..encoders.features import is_sparse, prepare_features
from ..encoders.graph_encoder import GraphEncoder, read_out


def full_neighborhood(sampler: BaseSampler) -> BaseSampler:
    """A copy of a neighbor sampler that takes every in-neighbor in one hop, sharing the
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
    ``batch_size`` rows; :meth:`~cl2gnn.node.encoders.graph_encoder.GraphEncoder.shared_map`),
    then the rows of ``batch_size`` target nodes at a time from their in-edges (the CSC graph
    ``sampler`` holds, e.g. the one of :func:`full_neighborhood`) weighted by the whole
    graph's ``degree`` (from :meth:`~cl2gnn.node.encoders.graph_encoder.GraphEncoder.degree`;
    GCN and GraphSAGE need it) — so every row equals the full-graph forward's, and the memory is
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
