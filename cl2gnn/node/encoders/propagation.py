"""The built-in encoder's propagation graph of a whole graph, its structure built once: a view
that only drops edges changes the entries' values, never the structure.

A view's graph for GCN is :math:`\\hat A = D^{-1/2} (M \\odot A + I) D^{-1/2}` and for
GraphSAGE :math:`D^{-1} (M \\odot A)`, with :math:`M` the view's kept edges and :math:`D` the
degrees of the kept edges. Rebuilding a CSR matrix from each view's edge list sorts the
edges and reads their count back from the device (a boolean index), twice per step. Here the
CSR structure of every edge (and GCN's self-loops) is sorted once; a view sets the dropped
edges' values to zero and recomputes the degrees with one scatter, so a step has no sort
and no host synchronisation. The zero entries cost their share of each sparse product and
change no sum: the rows hold the same entries, in the same order, as a CSR rebuilt from the
view's edges.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch_geometric import EdgeIndex
from torch_geometric.data import Data
from torch_geometric.utils import spmm

from ..views import keep_edges


@dataclass(frozen=True)
class ValuedGraph:
    """A propagation graph as the built-in encoder reads it: ``adj_t`` as a row-sorted
    :class:`~torch_geometric.EdgeIndex` (targets, sources) whose transpose is cached, and
    the entries' values (constants: no gradient flows to them); ``pairs`` the same
    (target, source) pairs as a plain tensor and ``shape`` the sizes, what a
    ``torch.compile`` trace reads (dynamo takes no ``EdgeIndex``)."""

    index: EdgeIndex
    values: Tensor
    pairs: Tensor
    shape: tuple[int, int]

    def matmul(self, x: Tensor) -> Tensor:
        """``adj_t @ x``: each target's weighted sum of its sources' rows (while
        ``torch.compile`` traces, the same sums by index)."""
        if torch.compiler.is_compiling():
            target, source = self.pairs
            messages = self.values[:, None] * x.index_select(0, source)
            return x.new_zeros(self.shape[0], x.size(1)).index_add(0, target, messages)
        with warnings.catch_warnings():  # torch's "sparse CSR is beta" notice
            warnings.simplefilter("ignore", UserWarning)
            return self.index.matmul(x, input_value=self.values)

    def size(self, dim: int) -> int:
        return self.shape[dim]

    def to_sparse_csr(self) -> Tensor:
        return self.index.to_sparse_csr(self.values)


class PropagationStructure:
    """The propagation graphs of the views of one graph, ``adj_t`` (row ``i``: the in-edges
    of node ``i``) on the structure of the whole graph, sorted once.

    Args:
        kind (str): ``"gcn"`` (symmetric normalisation, with ``self_loops``) or ``"sage"``
            (the mean over in-neighbors).
        edge_index (Tensor): the graph ``[2, E]``, sources first.
        num_nodes (int): ``N``.
        edge_weight (Tensor, optional): ``[E]`` non-negative weights of ``A``.
        self_loops (bool, optional): GCN's self-loops as ``gcn_norm`` adds them
            (``add_remaining_self_loops``): one per node, of weight 1, or of the weight of
            the node's own self-loop where the (weighted) input has one and the view keeps
            it (default: ``True``).

    :meth:`supports` tells which graphs it reproduces; the others are built per view from
    their edges.
    """

    def __init__(
        self,
        kind: str,
        edge_index: Tensor,
        num_nodes: int,
        edge_weight: Tensor | None = None,
        self_loops: bool = True,
    ) -> None:
        if not self.supports(kind, edge_index, edge_weight, self_loops):
            raise ValueError(f"no fixed propagation structure for this {kind!r} graph")
        self.kind, self.num_nodes, self.num_edges = kind, num_nodes, edge_index.size(1)
        device, dtype = edge_index.device, torch.get_default_dtype()
        source, target = edge_index
        weight = torch.ones(self.num_edges, device=device, dtype=dtype)
        if edge_weight is not None:
            weight = edge_weight.to(dtype)
        self.input_weight, self.own_loop = weight, None
        if kind == "gcn" and self_loops:  # the input's loops give way to one per node
            loop = source == target
            if edge_weight is not None and bool(loop.any()):  # node -> its own loop, or -1
                self.own_loop = torch.full((num_nodes,), -1, dtype=torch.long, device=device)
                self.own_loop[source[loop]] = torch.nonzero(loop).view(-1)
            nodes = torch.arange(num_nodes, device=device)
            source = torch.cat([source.masked_fill(loop, -1), nodes])
            target = torch.cat([target, nodes])
            weight = torch.cat([weight.masked_fill(loop, 0.0), weight.new_ones(num_nodes)])
        order = torch.argsort(target * (num_nodes + 1) + (source + 1), stable=True)
        order = order[source[order] >= 0]  # a replaced input loop has no entry
        self.listed = source.numel()  # the input edges, then GCN's loops
        self.order = order  # entry -> its place in that list
        self.source, self.target = source[order], target[order]
        self.weight = weight[order]
        if self.own_loop is not None:  # the entry of each node's loop (the list's last N)
            self.loop_entry = torch.empty(num_nodes, dtype=torch.long, device=device)
            last = order >= self.num_edges
            self.loop_entry[order[last] - self.num_edges] = torch.nonzero(last).view(-1)
            self.weight[self.loop_entry] = self._loop_weight(None)
        # adj_t's (target, source) pairs sorted by row, the transpose's order cached too: the
        # backward's product with the transpose then needs no sort either
        self.pairs = torch.stack([self.target, self.source])
        self.index = EdgeIndex(
            self.pairs, sparse_size=(num_nodes, num_nodes), sort_order="row"
        ).fill_cache_()

    @staticmethod
    def supports(
        kind: str, edge_index: Tensor, edge_weight: Tensor | None, self_loops: bool
    ) -> bool:
        """Whether the structure reproduces ``kind``'s graph: GCN and GraphSAGE, except a
        weighted graph with two self-loops on one node under GCN's self-loops (which of
        their weights ``gcn_norm`` keeps is not defined)."""
        if kind not in ("gcn", "sage"):
            return False
        if kind == "gcn" and self_loops and edge_weight is not None:
            looped = edge_index[0][edge_index[0] == edge_index[1]]
            return looped.numel() == torch.unique(looped).numel()
        return True

    def _loop_weight(self, keep: Tensor | None) -> Tensor:
        """GCN's self-loop weights ``[N]``: the node's own loop's where the view keeps it,
        else 1."""
        own = self.own_loop.clamp(min=0)
        present = self.own_loop >= 0
        if keep is not None:
            present = present & keep[own]
        weight = self.input_weight[own]
        return torch.where(present, weight, torch.ones_like(weight))

    def _weight(self, keep: Tensor | None) -> Tensor:
        if keep is None:
            return self.weight
        if keep.shape != (self.num_edges,):
            raise ValueError(f"keep must be [E] = [{self.num_edges}], got {tuple(keep.shape)}")
        loops = keep.new_ones(self.listed - self.num_edges)  # GCN's: never dropped
        weight = self.weight * torch.cat([keep, loops])[self.order].to(self.weight.dtype)
        if self.own_loop is not None:
            weight[self.loop_entry] = self._loop_weight(keep)
        return weight

    def graph(self, keep: Tensor | None = None, degree_offset: Tensor | None = None) -> ValuedGraph:
        """The propagation graph (``adj_t``, ``[N, N]``) of the view that keeps the input edges
        ``keep`` (booleans ``[E]``; ``None``: all); ``degree_offset`` (``[N]``) is added
        to the degrees (a sampled subgraph's: the in-edges of the whole graph it lacks)."""
        weight = self._weight(keep)
        degree = torch.zeros(self.num_nodes, dtype=weight.dtype, device=weight.device)
        degree.index_add_(0, self.target, weight)  # the kept in-edges, GCN's self-loop
        if degree_offset is not None:
            degree = degree + degree_offset.to(degree.dtype)
        if self.kind == "gcn":  # gcn_norm's D^-1/2 w D^-1/2, in its order of products
            scale = degree.pow(-0.5).masked_fill(degree == 0, 0.0)
            values = scale[self.source] * weight * scale[self.target]
        else:  # the mean: w / D (a node whose edges were all dropped sums zeros)
            values = weight / degree.masked_fill(degree == 0, 1.0)[self.target]
        return ValuedGraph(self.index, values, self.pairs, (self.num_nodes, self.num_nodes))


class ViewGraphs:
    """The built-in encoder's propagation graphs of the views of one graph: :meth:`kept` for
    a view given as its kept edges (:func:`~cl2gnn.node.views.view_masks`), from a
    :class:`PropagationStructure` where the encoder's graph allows one, :meth:`of` for a
    view's own edge list.

    Args:
        encoder (GraphEncoder): the built-in encoder.
        edge_index (Tensor): the graph ``[2, E]``.
        num_nodes (int): its nodes.
        edge_weight (Tensor, optional): its edges' weights.
        degree (Tensor, optional): ``[num_nodes]`` degrees of a larger graph the nodes are
            sampled from (:meth:`~cl2gnn.node.GraphEncoder.degree`): a view normalises by
            them less its dropped edges (mini-batches; no ``edge_weight``).
        finish (callable, optional): applied to every graph made (a mini-batch's trimming
            to the rows each layer needs).
    """

    def __init__(
        self,
        encoder: torch.nn.Module,
        edge_index: Tensor,
        num_nodes: int,
        edge_weight: Tensor | None = None,
        *,
        degree: Tensor | None = None,
        finish: Callable[[Tensor], Tensor | tuple[Tensor, ...]] | None = None,
    ) -> None:
        self.encoder, self.edge_index, self.num_nodes = encoder, edge_index, num_nodes
        self.edge_weight, self.finish = edge_weight, finish or (lambda graph: graph)
        kind, loops = encoder.kind, encoder.self_loops
        self.structure = None
        if PropagationStructure.supports(kind, edge_index, edge_weight, loops):
            self.structure = PropagationStructure(kind, edge_index, num_nodes, edge_weight, loops)
        self._last = None  # of(): the last view's tensors and their graph
        self.offset = None  # the whole graph's in-edges a sampled subgraph lacks
        if degree is not None:
            self.offset = degree - encoder.degree(edge_index, num_nodes)

    def kept(self, keep: Tensor | None) -> Tensor | tuple[Tensor, ...]:
        """The graph of the view that keeps the edges ``keep`` (``[E]``; ``None``: all)."""
        if self.structure is not None:
            return self.finish(self.structure.graph(keep, self.offset))
        graph = keep_edges(Data(edge_index=self.edge_index, edge_weight=self.edge_weight), keep)
        return self.of(graph.edge_index, graph.get("edge_weight"))

    def of(self, edge_index: Tensor, edge_weight: Tensor | None) -> Tensor | tuple[Tensor, ...]:
        """The graph of a view whose edges are ``edge_index`` (and ``edge_weight``); the
        last one is kept while the same, unmodified tensors come again (a view that caches
        its graph, such as :class:`~cl2gnn.node.Diffusion`: built once)."""
        key = [(t, t._version) if isinstance(t, Tensor) else t for t in (edge_index, edge_weight)]
        if self._last is not None and _same(self._last[0], key):
            return self._last[1]
        kind, loops = self.encoder.kind, self.encoder.self_loops
        if PropagationStructure.supports(kind, edge_index, edge_weight, loops):
            structure = PropagationStructure(kind, edge_index, self.num_nodes, edge_weight, loops)
            graph = structure.graph(None, self.offset)
        else:
            degree = None
            if self.offset is not None:
                degree = self.offset + self.encoder.degree(edge_index, self.num_nodes)
            graph = self.encoder.propagation_graph(
                edge_index, self.num_nodes, degree, edge_weight=edge_weight
            )
        self._last = (key, self.finish(graph))
        return self._last[1]


def _same(a: list, b: list) -> bool:
    """The same tensors (the objects, unmodified since) or the same ``None``s."""
    return all(
        (x is None and y is None)
        or (x is not None and y is not None and x[0] is y[0] and x[1] == y[1])
        for x, y in zip(a, b, strict=True)
    )


def propagate(graph: Tensor | ValuedGraph, h: Tensor) -> Tensor:
    """``adj_t @ h`` for a propagation graph: a CSR tensor, a :class:`ValuedGraph` or a
    dense matrix."""
    return graph.matmul(h) if as_matrix(graph) else spmm(graph, h)


def as_matrix(graph) -> bool:
    """Whether a propagation graph multiplies as it is: a :class:`ValuedGraph`, or a dense
    ``[N, N]`` matrix (MVGRL's exact diffusion), not renormalised."""
    if isinstance(graph, ValuedGraph):
        return True
    return graph.layout == torch.strided and graph.is_floating_point()


def first_rows(graph: Tensor, rows: int, columns: int) -> Tensor:
    """The first ``rows`` rows of a CSR ``adj_t`` whose entries lie in its first ``columns``
    columns: the propagation graph of a layer whose output is kept for the first ``rows``
    nodes only, from the first ``columns`` nodes' inputs (a sampled subgraph lists its nodes
    by hop: the seeds, then their neighbors)."""
    ptr = graph.crow_indices()[: rows + 1]
    end = int(ptr[-1])
    with warnings.catch_warnings():  # torch's "sparse CSR is beta" notices
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            ptr, graph.col_indices()[:end], graph.values()[:end], size=(rows, columns)
        )
