"""Uniform neighbor sampling in pure torch, for mini-batches of graphs that do not fit.

PyG's :class:`~torch_geometric.loader.NeighborLoader` samples through ``pyg-lib`` or
``torch-sparse``; where neither is installed, :class:`TorchNeighborSampler` does the same
job with torch operations and :func:`neighbor_loader` picks whichever is available.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch_geometric.typing
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader, NodeLoader
from torch_geometric.sampler import BaseSampler, NodeSamplerInput, SamplerOutput
from torch_geometric.sampler.neighbor_sampler import node_sample
from torch_geometric.sampler.utils import to_csc

from .._checks import integer
from .._validation import as_edge_index

# NeighborLoader options the torch sampler does not implement: refused on both paths, so
# that a script behaves the same with and without pyg-lib.
_NEIGHBOR_LOADER_ONLY = (
    "replace",
    "subgraph_type",
    "disjoint",
    "temporal_strategy",
    "time_attr",
    "weight_attr",
    "is_sorted",
    "directed",
    "neighbor_sampler",
)
_KEY_BITS = 31  # random key per candidate edge, below the frontier position in one int64


class TorchNeighborSampler(BaseSampler):
    r"""Uniform neighbor sampling without replacement, in torch, with the output of PyG's
    :class:`~torch_geometric.sampler.NeighborSampler` (``disjoint=False``,
    ``subgraph_type="directional"``).

    Hop :math:`h` samples, for every node added at hop :math:`h - 1` (the seeds at hop 1),
    :math:`\min(k_h, \deg^-(v))` of its in-edges :math:`u \to v` uniformly without
    replacement (all of them for :math:`k_h = -1`). A neighbor already in the subgraph
    keeps its first local index; new ones are appended in the order they are drawn.

    The graph is held in CSC form (edges sorted by target, PyG's
    :func:`~torch_geometric.sampler.utils.to_csc`), built once; a graph whose edges are
    already sorted by target (``data.sort(sort_by_row=False)``) is read in place, its
    ``edge_index[0]`` the CSC's sources, without the copy and the edge permutation (16
    bytes per edge). A hop is vectorised over
    its frontier: every candidate in-edge gets a random key, a sort by (frontier node, key)
    shuffles each node's segment in place, and the first :math:`k_h` of each segment are
    kept — :math:`O(\sum_v \deg^-(v))` time and memory per hop, so a hub costs its degree
    and never a dense ``[nodes, max_degree]`` block.

    Args:
        data (torch_geometric.data.Data): a homogeneous graph (``edge_index`` or ``adj_t``).
        num_neighbors (Sequence[int]): in-neighbors per node at each hop, ``-1`` for all.
        generator (torch.Generator, optional): the source of the random keys (default:
            torch's global generator). A data loader's worker processes each get a copy of
            it and would draw the same keys; with ``num_workers > 0`` leave it ``None``
            (the loader seeds every worker's global generator differently).
        share_memory (bool, optional): move the CSC tensors to shared memory, for loaders
            with worker processes (default: ``False``); a graph read in place moves its
            ``edge_index`` there (same values, new storage).

    Shapes:
        - **output** of :meth:`sample_from_nodes`: a
          :class:`~torch_geometric.sampler.SamplerOutput` with ``node`` ``[n]`` (global
          ids, the seeds first in their order), ``row`` / ``col`` ``[m]`` (local indices of
          each sampled edge's neighbor / of the node it was sampled for), ``edge`` ``[m]``
          (positions in the CSC order: :attr:`edge_permutation` maps them to the original
          edge ids, as PyG's loaders do; ``None`` for a graph sorted by target, whose CSC
          positions are its edge ids), ``num_sampled_nodes`` (seeds, then the nodes new
          at each hop), ``num_sampled_edges`` (per hop) and ``metadata = (input_id, None)``.

    Example:
        >>> sampler = TorchNeighborSampler(data, [15, 10])
        >>> loader = NodeLoader(data, node_sampler=sampler, batch_size=1024, shuffle=True)
    """

    def __init__(
        self,
        data: Data,
        num_neighbors: Sequence[int],
        *,
        generator: torch.Generator | None = None,
        share_memory: bool = False,
    ):
        if not isinstance(data, Data):
            raise ValueError(
                f"data must be a homogeneous torch_geometric.data.Data, got {type(data).__name__}"
            )
        num_neighbors = list(num_neighbors)
        if not num_neighbors:
            raise ValueError("num_neighbors must name at least one hop, got []")
        for hop, count in enumerate(num_neighbors):
            integer(-1)(count, f"num_neighbors[{hop}]")
        _check_graph(data)
        self.num_neighbors = num_neighbors
        self.num_nodes = data.num_nodes
        self.generator = generator
        self.colptr, self.row, self.perm = to_csc(
            data, device="cpu", share_memory=share_memory, is_sorted=_sorted_by_target(data)
        )

    @property
    def edge_permutation(self) -> Tensor | None:
        return self.perm

    def sample_from_nodes(self, inputs: NodeSamplerInput) -> SamplerOutput:
        if inputs.input_type is not None or inputs.time is not None:
            raise ValueError("TorchNeighborSampler samples homogeneous graphs without time")
        seeds = inputs.node
        if seeds.numel() and (int(seeds.min()) < 0 or int(seeds.max()) >= self.num_nodes):
            raise ValueError(f"seed nodes must lie in 0 … {self.num_nodes - 1}")
        return node_sample(inputs, self._sample)

    def sample_from_edges(self, inputs, neg_sampling=None):
        raise NotImplementedError("TorchNeighborSampler samples from seed nodes only")

    def _sample(self, seeds: Tensor, seed_time: Tensor | None = None) -> SamplerOutput:
        node = seeds.to(torch.long)
        # global ids seen so far, sorted, beside the local index of their first occurrence
        known, inverse = torch.unique(node, return_inverse=True)
        known_local = _first_occurrence(inverse, known.numel())
        rows, cols, edges = [], [], []
        num_sampled_nodes, num_sampled_edges = [node.numel()], []
        begin, end = 0, node.numel()
        for count in self.num_neighbors:
            edge, target = self._sample_in_edges(node[begin:end], count)
            local, new, known, known_local = _assign_local(
                self.row[edge], known, known_local, node.numel()
            )
            rows.append(local)
            cols.append(target + begin)
            edges.append(edge)
            node = torch.cat([node, new])
            num_sampled_nodes.append(new.numel())
            num_sampled_edges.append(edge.numel())
            begin, end = end, node.numel()
        return SamplerOutput(
            node=node,
            row=torch.cat(rows),
            col=torch.cat(cols),
            edge=torch.cat(edges),
            num_sampled_nodes=num_sampled_nodes,
            num_sampled_edges=num_sampled_edges,
        )

    def _sample_in_edges(self, frontier: Tensor, count: int) -> tuple[Tensor, Tensor]:
        """CSC positions of ``min(count, degree)`` random in-edges of each frontier node,
        grouped by node, and the index in ``frontier`` of the node each was sampled for."""
        start = self.colptr[frontier]
        degree = self.colptr[frontier + 1] - start
        segment = torch.repeat_interleave(degree)  # each candidate's frontier node
        rank = torch.arange(segment.numel()) - (degree.cumsum(0) - degree)[segment]
        offset = rank
        if count >= 0 and bool((degree > count).any()):
            key = torch.randint(1 << _KEY_BITS, segment.shape, generator=self.generator)
            # segments stay where they are; each one's candidates are shuffled in place
            offset = rank[((segment << _KEY_BITS) | key).argsort()]
            keep = rank < count
            segment, offset = segment[keep], offset[keep]
        return start[segment] + offset, segment


def _check_graph(data: Data) -> None:
    """``edge_index`` ``[2, E]``, integer, in ``0 … N-1``: the CSC build below (PyG's
    ``index2ptr``, an unchecked ``torch._convert_indices_from_coo_to_csr``) writes one
    pointer per target up to the largest, past its ``N + 1`` entries for a target ``>= N``."""
    if data.edge_index is not None:
        as_edge_index(data.edge_index, None, data.num_nodes, allow_empty=True)


def _sorted_by_target(data: Data) -> bool:
    """Whether ``data``'s ``edge_index`` is in CSC order already and contiguous (``False``
    without one: :func:`~torch_geometric.sampler.utils.to_csc` then reads ``adj_t``). A
    strided one (e.g. a transposed ``[E, 2]`` tensor) is copied: PyG's ``index2ptr`` miscounts
    strided targets."""
    edge_index = data.edge_index
    return (
        edge_index is not None and edge_index.is_contiguous() and data.is_sorted(sort_by_row=False)
    )


def _first_occurrence(inverse: Tensor, num_unique: int) -> Tensor:
    """For each unique value (``inverse`` from :func:`torch.unique`), the first position
    holding it."""
    positions = torch.arange(inverse.numel())
    first = torch.full((num_unique,), inverse.numel(), dtype=torch.long)
    return first.scatter_reduce_(0, inverse, positions, "amin")


def _assign_local(
    neighbor: Tensor, known: Tensor, known_local: Tensor, num_nodes: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Local indices of the sampled ``neighbor`` ids: a known node keeps its index, new
    ones get the next indices after the ``num_nodes`` so far, in order of first appearance.
    Returns the local indices, the new nodes' global ids in that order and the updated
    sorted lookup."""
    position = torch.searchsorted(known, neighbor)
    found = position < known.numel()
    found[found.clone()] = known[position[found]] == neighbor[found]
    local = torch.empty_like(neighbor)
    local[found] = known_local[position[found]]
    fresh = neighbor[~found]
    new_sorted, inverse = torch.unique(fresh, return_inverse=True)
    appearance = _first_occurrence(inverse, new_sorted.numel()).argsort()
    new_local = torch.empty_like(appearance)
    new_local[appearance] = torch.arange(appearance.numel()) + num_nodes
    local[~found] = new_local[inverse]
    known, order = torch.cat([known, new_sorted]).sort()
    known_local = torch.cat([known_local, new_local])[order]
    return local, new_sorted[appearance], known, known_local


def neighbor_loader(data: Data, num_neighbors: Sequence[int], **kwargs) -> NodeLoader:
    r"""Mini-batches of sampled neighborhoods: PyG's
    :class:`~torch_geometric.loader.NeighborLoader` where its sampler backend (``pyg-lib``
    or ``torch-sparse``) is installed, else a :class:`~torch_geometric.loader.NodeLoader`
    over :class:`TorchNeighborSampler`. Both yield :class:`~torch_geometric.data.Data`
    batches with ``n_id`` (the seeds first), ``e_id`` (original edge ids), ``batch_size``
    and every node and edge attribute of ``data`` sliced to the batch.

    Seed with :func:`torch.manual_seed` for a reproducible sequence of batches.

    Args:
        data (torch_geometric.data.Data): a homogeneous graph.
        num_neighbors (Sequence[int]): in-neighbors per node at each hop, ``-1`` for all.
        **kwargs: :class:`~torch_geometric.loader.NodeLoader` and
            :class:`torch.utils.data.DataLoader` options (``input_nodes``, ``batch_size``,
            ``shuffle``, ``num_workers``, ...); options only ``NeighborLoader`` has
            (``replace``, ``disjoint``, ``time_attr``, ...) are refused on both paths;
            ``is_sorted`` is not needed: a graph sorted by target
            (``data.sort(sort_by_row=False)``) is found so and sampled in place.
    """
    if isinstance(data, Data):
        _check_graph(data)
    unsupported = sorted(set(kwargs) & set(_NEIGHBOR_LOADER_ONLY))
    if unsupported:
        raise ValueError(
            f"neighbor_loader does not support {', '.join(unsupported)} (the torch sampler "
            "samples uniformly without replacement, directional, non-disjoint)"
        )
    if torch_geometric.typing.WITH_PYG_LIB or torch_geometric.typing.WITH_TORCH_SPARSE:
        return NeighborLoader(
            data, num_neighbors=list(num_neighbors), is_sorted=_sorted_by_target(data), **kwargs
        )
    sampler = TorchNeighborSampler(
        data, num_neighbors, share_memory=kwargs.get("num_workers", 0) > 0
    )
    return NodeLoader(data, node_sampler=sampler, **kwargs)
