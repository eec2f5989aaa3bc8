"""Augmented views of a graph as PyG transforms (``Data -> Data``): GRACE's edge dropping
(:class:`DropEdge`, PyG's ``dropout_edge``) and feature-column masking (:class:`MaskFeatures`,
drawn as PyG's ``mask_feature`` draws it). Any other PyG transform is a view too, and
``torch_geometric.transforms.Compose`` chains them.

The built-in encoder opts into one speed-up: where a view is made of these two alone (or of
other steps that drop edges or mask whole columns), the view is drawn as its masks
(:func:`view_masks`): the column mask is applied to the first layer's weight, so that no view
copies the features, and the kept edges zero the dropped entries of a propagation graph whose
structure is built once (:class:`~cl2gnn.node.encoders.propagation.PropagationStructure`)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import GDC, BaseTransform, Compose

View = Callable[[Data], Data]


def _probability(p: float, name: str) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


class DropEdge(BaseTransform):
    """Drops each edge with probability ``p`` (as PyG's ``dropout_edge``), and its
    ``edge_weight`` / ``edge_attr`` with it.

    Args:
        p (float): the probability of dropping an edge.
    """

    edges_in_range = True  # a subset of the input's edges: no range check (made_by_library)

    def __init__(self, p: float) -> None:
        self.p = _probability(p, "p")

    def edges_kept(self, data: Data) -> Tensor | None:
        """The edges of ``data`` this call keeps (booleans ``[E]``), drawn as PyG's
        ``dropout_edge`` draws them (its mask, without indexing the edges: a boolean index
        waits for the device); ``None``: all (``p = 0`` draws nothing, as it)."""
        if self.p == 0:
            return None
        return torch.rand(data.edge_index.size(1), device=data.edge_index.device) >= self.p

    def forward(self, data: Data) -> Data:
        return keep_edges(data, self.edges_kept(data))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class MaskFeatures(BaseTransform):
    """Masks each feature column with probability ``p``, the same columns on every node
    (GRACE's feature masking; PyG's ``mask_feature(mode="col")``).

    Args:
        p (float): the probability of masking a column.
        generator (torch.Generator, optional): a CPU generator to draw the mask from
            instead of torch's global one; then one draw of ``F`` numbers per call whatever
            ``p``, so that processes whose generators are seeded alike mask the same columns
            (default: ``None``).
    """

    reads_edges = False  # view_masks: it reads the features' width alone
    edges_in_range = True  # the input's edges: no range check (made_by_library)

    def __init__(self, p: float, generator: torch.Generator | None = None) -> None:
        self.p, self.generator = _probability(p, "p"), generator

    def keep(self, num_features: int, device: torch.device | str = "cpu") -> Tensor | None:
        """The columns kept (booleans ``[num_features]``); ``None``: all of them (``p = 0``
        draws nothing, as ``mask_feature`` draws nothing)."""
        if self.generator is not None:
            return (torch.rand(num_features, generator=self.generator) >= self.p).to(device)
        if self.p == 0:
            return None
        return torch.rand(num_features, device=device) >= self.p

    def columns_kept(self, data: Data) -> Tensor | None:
        """The columns of ``data.x`` this call keeps (:meth:`keep`)."""
        return self.keep(data.x.size(1), data.x.device)

    def forward(self, data: Data) -> Data:
        keep = self.columns_kept(data)
        if keep is not None:
            data.x = data.x * keep.to(data.x.dtype)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


# the most nodes whose exact diffusion is computed (float64, dense: 3.2 GB at this size);
# a larger graph sets k or eps
DENSE_MAX_NODES = 20_000


class Diffusion(BaseTransform):
    r"""The graph replaced by its personalised-PageRank diffusion (MVGRL's second view),

    .. math::
        S = \alpha \big(I - (1 - \alpha) D^{-1/2} (A + I) D^{-1/2}\big)^{-1},

    :math:`D` the degrees of :math:`A + I` (MVGRL's ``compute_ppr``; row :math:`i` of
    :math:`S` is what node :math:`i` aggregates, :math:`A_{ij}` the edge :math:`j \to i`).
    With neither ``k`` nor ``eps``, :math:`S` as it is (:meth:`matrix`, dense, in float64;
    as ``edge_index`` with ``edge_weight``, its non-zero entries); else sparsified by PyG's
    ``GDC`` (exact, dense: :math:`O(N^2)` memory) to each node's ``k`` largest in-weights,
    or to the weights of at least ``eps``. An input's ``edge_weight`` weighs :math:`A`. The
    diffusion of a graph is computed once (the input's tensors, compared on every call).

    Args:
        alpha (float, optional): the teleport probability (default: ``0.2``, MVGRL's).
        k (int, optional): the in-edges kept per node (default: ``128``, PyG's GDC example).
        eps (float, optional): the threshold instead of ``k`` (default: ``None``).
    """

    edges_in_range = True  # computed on the input's nodes: no range check (made_by_library)

    def __init__(self, alpha: float = 0.2, k: int | None = 128, eps: float | None = None) -> None:
        self.alpha = _probability(alpha, "alpha")
        if k is not None and eps is not None:
            raise ValueError(f"give at most one of k and eps, got k={k!r}, eps={eps!r}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        if eps is not None and (
            isinstance(eps, bool) or not isinstance(eps, int | float) or eps <= 0
        ):
            raise ValueError(f"eps must be a number > 0, got {eps!r}")
        self.k, self.eps = k, eps
        self.gdc = None
        if not self.exact:
            sparsify = (
                dict(method="topk", k=k, dim=0)
                if k is not None
                else dict(method="threshold", eps=eps)
            )
            self.gdc = GDC(
                self_loop_weight=1.0,
                normalization_in="sym",
                normalization_out=None,
                diffusion_kwargs=dict(method="ppr", alpha=self.alpha),
                sparsification_kwargs=sparsify,
                exact=True,
            )
        self._cache: tuple[tuple, tuple[Tensor, Tensor]] | None = None
        self._dense: tuple[tuple, Tensor] | None = None

    @property
    def exact(self) -> bool:
        """Whether it is the diffusion as it is (neither ``k`` nor ``eps``)."""
        return self.k is None and self.eps is None

    def matrix(
        self, edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None
    ) -> Tensor:
        """The exact diffusion :math:`S` ``[num_nodes, num_nodes]`` (float64, dense; row
        :math:`i`: what node :math:`i` aggregates), computed once per graph; ``ValueError``
        past :data:`DENSE_MAX_NODES` nodes."""
        key = (edge_index, edge_weight, num_nodes)
        if self._dense is not None and same_inputs(self._dense[0], key):
            return self._dense[1]
        if num_nodes > DENSE_MAX_NODES:
            raise ValueError(
                f"the exact diffusion of {num_nodes} nodes is dense ({num_nodes}² entries, at "
                f"most {DENSE_MAX_NODES} nodes): give k or eps (MVGRL's diffusion_k) to sparsify it"
            )
        f64 = torch.float64
        device = edge_index.device
        weight = torch.ones(edge_index.size(1), dtype=f64, device=device)
        if edge_weight is not None:
            weight = edge_weight.to(f64)
        adjacency = torch.zeros(num_nodes, num_nodes, dtype=f64, device=device)
        adjacency.index_put_((edge_index[1], edge_index[0]), weight, accumulate=True)
        adjacency += torch.eye(num_nodes, dtype=f64, device=device)
        scale = adjacency.sum(1).rsqrt()
        transition = scale[:, None] * adjacency * scale[None, :]
        eye = torch.eye(num_nodes, dtype=f64, device=device)
        dense = self.alpha * torch.linalg.inv(eye - (1.0 - self.alpha) * transition)
        self._dense = (key, dense)
        return dense

    def diffusion(
        self, edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """The (sparsified) diffusion of a graph: ``edge_index`` ``[2, E']``,
        ``edge_weight`` ``[E']``."""
        key = (edge_index, edge_weight, num_nodes)
        if self._cache is not None and same_inputs(self._cache[0], key):
            return self._cache[1]
        dtype = torch.get_default_dtype()
        if self.exact:
            dense = self.matrix(edge_index, num_nodes, edge_weight)
            target, source = dense.nonzero().T
            out = (torch.stack([source, target]), dense[target, source].to(dtype))
        else:
            graph = Data(edge_index=edge_index, edge_attr=edge_weight, num_nodes=num_nodes)
            graph = self.gdc(graph)
            out = (graph.edge_index, graph.edge_attr.to(dtype))
        self._cache = (key, out)
        return out

    def forward(self, data: Data) -> Data:
        data.edge_index, data.edge_weight = self.diffusion(
            data.edge_index, data.num_nodes, data.get("edge_weight")
        )
        if data.get("edge_attr") is not None:  # the input's edges' attributes: gone with them
            del data.edge_attr
        return data

    def __repr__(self) -> str:
        sparsify = (
            "exact" if self.exact else f"k={self.k}" if self.k is not None else f"eps={self.eps}"
        )
        return f"{type(self).__name__}(alpha={self.alpha}, {sparsify})"


def same_inputs(a: tuple, b: tuple) -> bool:
    """Whether two tuples of tensors, ``None`` or numbers hold the same values: a view's
    cache of what it computed from a graph is valid for the next call's graph."""
    for x, y in zip(a, b, strict=True):
        if isinstance(x, Tensor) != isinstance(y, Tensor):
            return False
        if isinstance(x, Tensor):
            if x is not y and not (
                x.shape == y.shape and x.device == y.device and torch.equal(x, y)
            ):
                return False
        elif x != y:
            return False
    return True


def config_views(
    drop_edge: Sequence[float], drop_feature: Sequence[float], generator=None
) -> tuple[View, View]:
    """The two views of a configuration: ``Compose([DropEdge, MaskFeatures])`` with each
    view's probabilities."""
    return tuple(
        Compose([DropEdge(drop_edge[v]), MaskFeatures(drop_feature[v], generator)]) for v in (0, 1)
    )


def view_pair(augment: View | Sequence[View] | None, default: tuple[View, View] | None):
    """``augment`` as two views: one callable for both, a pair, or ``None`` (``default``)."""
    if augment is None:
        return default
    if callable(augment):
        return (augment, augment)
    if isinstance(augment, Sequence) and len(augment) == 2 and all(map(callable, augment)):
        return tuple(augment)
    raise ValueError(
        "augment must be a callable Data -> Data (a PyG transform) or a pair of them (one per "
        f"view), got {augment!r}"
    )


def made_by_library(view: View) -> bool:
    """Whether ``view`` is made of the library's views alone (``edges_in_range``: their
    edges are the input's, a subset or reweighting of them, or computed from them), whose
    output needs no range check (a host sync per view on a GPU)."""
    if isinstance(view, Compose):
        return all(made_by_library(step) for step in view.transforms)
    return getattr(view, "edges_in_range", False) is True


def keep_edges(data: Data, kept: Tensor | None) -> Data:
    """``data`` with the edges ``kept`` (booleans ``[E]``; ``None``: all) and their
    ``edge_weight`` / ``edge_attr``."""
    if kept is None:
        return data
    data.edge_index = data.edge_index[:, kept]
    for key in ("edge_weight", "edge_attr"):
        if data.get(key) is not None:
            data[key] = data[key][kept]
    return data


def _steps(view: View) -> list[View]:
    return [s for t in view.transforms for s in _steps(t)] if isinstance(view, Compose) else [view]


def _and(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    return b if a is None else a if b is None else a & b


def view_masks(view: View, data: Data) -> tuple[Tensor | None, Tensor | None] | None:
    """Where ``view`` is made of one step that drops edges (``edges_kept(data)``:
    :class:`DropEdge`) and steps that mask whole feature columns (``columns_kept(data)``:
    :class:`MaskFeatures`): the view as its masks, ``(edges kept [E], columns kept [F])``
    (``None``: all), drawn in the order and from the streams the view's own call would draw
    them, ``data`` left as it is; ``None`` for any other view. A column step after the edge
    step sees the graph with the edges dropped, as in the view's call, unless it reads no
    edges (``reads_edges = False``)."""
    steps = _steps(view)
    droppers = [s for s in steps if callable(getattr(s, "edges_kept", None))]
    if len(droppers) > 1 or not all(s in droppers or _masks_columns(s) for s in steps):
        return None
    edges = columns = None
    seen = data
    for step in steps:
        if step in droppers:
            edges = step.edges_kept(data)
            continue
        if edges is not None and seen is data and getattr(step, "reads_edges", True):
            seen = keep_edges(copy.copy(data), edges)  # its tensors not written
        columns = _and(columns, step.columns_kept(seen))
    return edges, columns


def _masks_columns(step: View) -> bool:
    return callable(getattr(step, "columns_kept", None))
