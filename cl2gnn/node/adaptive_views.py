r"""GCA's adaptive views (Zhu et al., *Graph Contrastive Learning with Adaptive Augmentation*,
WWW 2021) as PyG transforms: edges and feature columns dropped with probabilities that
spare the important ones, importance read off a node centrality :math:`\varphi`
(``"degree"``, ``"pagerank"`` or ``"eigenvector"``).

Both turn a log-importance :math:`s` into probabilities the same way,

.. math::
    p = \min\Big(\frac{s_{\max} - s}{s_{\max} - \mu_s} \, p_0,\; p_\tau\Big),

the mean probability ``p_0`` before the cut-off ``p_τ``: for an edge ``u → v``
:math:`s_{uv} = \log \varphi(v)` (the target's centrality, as the authors' code), for a
feature column ``f`` :math:`s_f = \log \sum_u |x_{uf}| \varphi(u)`. The probabilities are
computed once per graph (the input's tensors, compared on every call) and the draws made
afresh on every call.

A feature column that is zero on every node has no importance (:math:`s_f = -\infty`). Here
it is masked at ``p_τ`` and the others keep their probabilities (``zero_columns="itself"``).
GCA's code (``feature_drop_weights``, ``drop_feature_weighted_2``) divides by the mean of
``s``, which that column makes ``-inf``: its NaN spreads to every column, and every NaN
probability falls to the cut-off, so one such column masks *every* column at ``p_τ`` in both
views (``zero_columns="every_column"``). Cora has one (1 of 1,433); cornell, texas,
wisconsin and chameleon_filtered have 90 to 345.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform
from torch_geometric.utils import degree, to_undirected

from .._checks import one_of
from .views import keep_edges, same_inputs

PAGERANK_DAMPING, PAGERANK_ITERATIONS = 0.85, 200  # the authors' code's
EIGENVECTOR_FLOOR = 1e-8  # their floor under the eigenvector's zeros, before the log


# what GCA's adaptive views read a node's importance off
CENTRALITIES = ("degree", "pagerank", "eigenvector")
# what a feature column without importance (zero on every node) does to the probabilities:
# that column at the cut-off, or every column at the cut-off (GCA's code, by its NaN)
ZERO_COLUMNS = ("itself", "every_column")


def node_centrality(edge_index: Tensor, num_nodes: int, centrality: str) -> Tensor:
    """Each node's centrality ``[num_nodes]`` in float64: its degree in the undirected
    graph, its PageRank (the authors' unnormalised power iteration, ``x ← 0.15 + 0.85 ·
    Σ_{u→v} x_u / d_out(u)`` from ones, 200 times) or its eigenvector centrality (the
    leading eigenvector of the undirected adjacency, non-negative)."""
    if centrality == "degree":
        return degree(to_undirected(edge_index, num_nodes=num_nodes)[1], num_nodes, torch.float64)
    if centrality == "pagerank":
        source, target = edge_index
        out_degree = degree(source, num_nodes, torch.float64)
        x = torch.ones(num_nodes, dtype=torch.float64, device=edge_index.device)
        for _ in range(PAGERANK_ITERATIONS):
            messages = x[source] / out_degree[source]
            spread = torch.zeros_like(x).index_add_(0, target, messages)
            x = (1 - PAGERANK_DAMPING) * x + PAGERANK_DAMPING * spread
        return x
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import eigsh

    edges = to_undirected(edge_index, num_nodes=num_nodes).cpu().numpy()
    adjacency = coo_matrix(([1.0] * edges.shape[1], tuple(edges)), (num_nodes, num_nodes))
    _, vector = eigsh(adjacency.tocsr(), k=1, which="LA")
    vector = torch.from_numpy(vector[:, 0]).to(edge_index.device)
    return vector * torch.sign(vector.sum())  # the Perron vector's sign is arbitrary


def _log_centrality(centrality: Tensor, name: str) -> Tensor:
    if name == "eigenvector":
        centrality = centrality.clamp(min=0) + EIGENVECTOR_FLOOR
    return centrality.log()


def drop_probability(s: Tensor, p: float, p_max: float) -> Tensor:
    """``min((s_max - s) / (s_max - mean(s)) · p, p_max)`` for log-importances ``s``; ``p``
    for all where every ``s`` is equal. ``-inf`` (no importance at all) gives ``p_max``."""
    finite = s[s.isfinite()]
    if finite.numel() == 0 or finite.max() == finite.mean():
        return torch.where(s.isfinite(), p, p_max).to(s.dtype)
    top, mean = finite.max(), finite.mean()
    return ((top - s) / (top - mean) * p).clamp(max=p_max)


def edge_drop_probability(
    edge_index: Tensor, num_nodes: int, p: float, p_max: float, centrality: str
) -> Tensor:
    """Each edge's probability of being dropped ``[E]`` (float64), by its target's
    centrality."""
    s = _log_centrality(node_centrality(edge_index, num_nodes, centrality), centrality)
    return drop_probability(s[edge_index[1]], p, p_max)


def feature_mask_probability(
    x: Tensor,
    edge_index: Tensor,
    p: float,
    p_max: float,
    centrality: str,
    binary: bool = False,
    zero_columns: str = "itself",
) -> Tensor:
    """Each feature column's probability of being masked ``[F]`` (float64), by the
    centrality-weighted magnitude of the column, ``Σ_u |x_uf| φ(u)``, or with ``binary`` its
    centrality-weighted presence, ``Σ_u [x_uf ≠ 0] φ(u)`` (GCA's code on sparse features).
    A column of weight zero gets ``p_max``, and with ``zero_columns="every_column"`` so does
    every column (GCA's code: the NaN of its mean)."""
    phi = node_centrality(edge_index, x.size(0), centrality)
    if centrality == "eigenvector":
        phi = phi.clamp(min=0)
    magnitude = (x != 0) if binary else x.abs()
    weight = magnitude.to(torch.float64).T @ phi
    if zero_columns == "every_column" and bool((weight == 0).any()):
        return torch.full_like(weight, p_max)
    return drop_probability(weight.log(), p, p_max)


def _check(p: float, p_max: float, centrality: str) -> tuple[float, float, str]:
    for name, value in (("p", p), ("p_max", p_max)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")
    if p_max < p:
        raise ValueError(f"p_max must be at least p ({p}), got {p_max!r}")
    if centrality not in CENTRALITIES:
        raise ValueError(f"centrality must be one of {CENTRALITIES}, got {centrality!r}")
    return float(p), float(p_max), centrality


class _Adaptive(BaseTransform):
    """The arguments, their checks and the cache of probabilities both views share."""

    edges_in_range = True  # a subset of the input's edges: no range check (made_by_library)

    def __init__(self, p: float, p_max: float = 0.7, centrality: str = "degree") -> None:
        self.p, self.p_max, self.centrality = _check(p, p_max, centrality)
        self._cache: tuple[tuple, Tensor] | None = None

    def _cached(self, inputs: tuple[Tensor, ...], compute) -> Tensor:
        if self._cache is not None:
            known, probability = self._cache
            if same_inputs(known, inputs):
                return probability
        probability = compute().float()
        self._cache = (inputs, probability)
        return probability

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(p={self.p}, p_max={self.p_max}, centrality={self.centrality!r})"
        )


class AdaptiveDropEdge(_Adaptive):
    r"""Drops each edge ``u → v`` with probability
    :math:`\min\big(\frac{s_{\max} - s_{uv}}{s_{\max} - \mu_s} p,\, p_\tau\big)`,
    :math:`s_{uv} = \log \varphi(v)`: edges into central nodes are kept more often (GCA's
    topology view), and its ``edge_weight`` / ``edge_attr`` with it.

    Args:
        p (float): the mean probability of dropping an edge (before the cut-off), in
            ``[0, 1)``.
        p_max (float, optional): the cut-off :math:`p_\tau`, in ``[p, 1)`` (default: ``0.7``,
            the authors').
        centrality (str, optional): ``"degree"``, ``"pagerank"`` or ``"eigenvector"``
            (default: ``"degree"``).
    """

    def probability(self, edge_index: Tensor, num_nodes: int) -> Tensor:
        """Each edge's probability of being dropped ``[E]``."""
        return self._cached(
            (edge_index, num_nodes),
            lambda: edge_drop_probability(
                edge_index, num_nodes, self.p, self.p_max, self.centrality
            ),
        )

    def edges_kept(self, data: Data) -> Tensor:
        """The edges of ``data`` this call keeps (booleans ``[E]``)."""
        probability = self.probability(data.edge_index, data.num_nodes)
        return torch.rand_like(probability) >= probability

    def forward(self, data: Data) -> Data:
        return keep_edges(data, self.edges_kept(data))


class AdaptiveMaskFeatures(_Adaptive):
    r"""Masks each feature column ``f`` (on every node) with probability
    :math:`\min\big(\frac{s_{\max} - s_f}{s_{\max} - \mu_s} p,\, p_\tau\big)`,
    :math:`s_f = \log \sum_u |x_{uf}| \varphi(u)` (with ``binary``, :math:`[x_{uf} \neq 0]`
    in place of :math:`|x_{uf}|`): the columns present on central nodes are kept more often
    (GCA's attribute view).

    Args:
        p (float): the mean probability of masking a column (before the cut-off), in
            ``[0, 1)``.
        p_max (float, optional): the cut-off :math:`p_\tau`, in ``[p, 1)`` (default: ``0.7``,
            the authors').
        centrality (str, optional): ``"degree"``, ``"pagerank"`` or ``"eigenvector"``
            (default: ``"degree"``).
        binary (bool, optional): weigh a column by where it is non-zero, not by its
            magnitude (GCA's code on every graph but WikiCS) (default: ``False``).
        zero_columns (str, optional): where some column is zero on every node,
            ``"itself"`` masks that column at ``p_max`` and the others by their importance;
            ``"every_column"`` masks every column at ``p_max``, as GCA's code does through
            the NaN that column's ``log 0`` makes of its mean (default: ``"itself"``).
    """

    def __init__(
        self,
        p: float,
        p_max: float = 0.7,
        centrality: str = "degree",
        binary: bool = False,
        zero_columns: str = "itself",
    ) -> None:
        super().__init__(p, p_max, centrality)
        if not isinstance(binary, bool):
            raise ValueError(f"binary must be a bool, got {binary!r}")
        self.binary = binary
        self.zero_columns = one_of(*ZERO_COLUMNS)(zero_columns, "zero_columns")

    def probability(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """Each feature column's probability of being masked ``[F]``."""
        return self._cached(
            (x, edge_index),
            lambda: feature_mask_probability(
                x, edge_index, self.p, self.p_max, self.centrality, self.binary, self.zero_columns
            ),
        )

    def columns_kept(self, data: Data) -> Tensor:
        """The columns of ``data.x`` this call keeps (booleans ``[F]``)."""
        probability = self.probability(data.x, data.edge_index).to(data.x.device)
        return torch.rand_like(probability) >= probability

    def forward(self, data: Data) -> Data:
        data.x = data.x * self.columns_kept(data).to(data.x.dtype)
        return data
