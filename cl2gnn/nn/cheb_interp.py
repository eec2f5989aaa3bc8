from __future__ import annotations

import math
from functools import partial
from typing import Annotated

import torch
from torch import Tensor
from torch_geometric.nn import MessagePassing
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import coalesce, remove_self_loops

from .._checks import integer, one_of
from .._options import Finite, OptionsChecked, check_options
from .._registry import OPERATORS, Example
from .._validation import as_edge_index, check_features
from . import _examples

Order = Annotated[int, integer(1, 64)]
PassBand = Annotated[str, one_of("low", "high")]


def chebyshev_nodes(K: int, dtype: torch.dtype = torch.float64) -> Tensor:
    r"""The :math:`K + 1` Chebyshev–Gauss nodes in increasing order,
    :math:`x_j = \cos\big((K - j + \tfrac12)\pi / (K + 1)\big)`, so that :math:`j = 0` is the
    lowest frequency of :math:`\tilde L = L - I` (PolyGCL's order, the reverse of ChebNetII's)."""
    j = torch.arange(K + 1, dtype=torch.float64)
    return torch.cos((K - j + 0.5) * math.pi / (K + 1)).to(dtype)


def chebyshev_basis(x: Tensor, K: int) -> Tensor:
    """``[len(x), K + 1]``: column ``k`` is :math:`T_k(x)` (the three-term recursion)."""
    columns = [torch.ones_like(x), x]
    for _ in range(2, K + 1):
        columns.append(2 * x * columns[-1] - columns[-2])
    return torch.stack(columns[: K + 1], dim=1)


def interpolation_values(theta: Tensor, pass_band: str) -> Tensor:
    r"""The filter's values :math:`\gamma_0 \dots \gamma_K` at the nodes: prefix sums of the
    ReLU'd increments, non-increasing from 2 (``"low"``) or non-decreasing from 0
    (``"high"``). No other bound: the low-pass values may go below 0, as in the authors' code."""
    steps = torch.cat([theta.new_zeros(1), torch.cumsum(torch.relu(theta), 0)])
    return 2 - steps if pass_band == "low" else steps


def chebyshev_coefficients(gamma: Tensor) -> Tensor:
    r"""The coefficients :math:`w_k = \frac{2}{K+1}\sum_j \gamma_j T_k(x_j)` of the degree-:math:`K`
    Chebyshev interpolant through :math:`(x_j, \gamma_j)`, the first one halved: the filter
    is :math:`g(t) = \sum_k w_k T_k(t)`."""
    K = gamma.numel() - 1
    basis = chebyshev_basis(chebyshev_nodes(K, gamma.dtype).to(gamma.device), K)
    w = 2.0 / (K + 1) * basis.T @ gamma
    return torch.cat([w[:1] / 2, w[1:]])


@OPERATORS.register
class ChebInterpConv(OptionsChecked, MessagePassing):
    r"""PolyGCL's spectral filter (Chen et al., *PolyGCL: Graph Contrastive Learning via
    Learnable Spectral Polynomial Filters*, ICLR 2024): ChebNetII's Chebyshev interpolation
    (He et al., NeurIPS 2022) on :math:`\tilde L = L - I = -\bar A`, where :math:`\bar A` is
    the symmetric part of :math:`D^{-1/2} A D^{-1/2}` (self-loops removed, as PyG's
    ``get_laplacian``), with learnable values :math:`\gamma_j` at the :math:`K + 1`
    Chebyshev nodes :math:`x_j` (:func:`chebyshev_nodes`), constrained monotone by prefix sums,

    .. math::
        \gamma^{\text{low}}_j = 2 - \sum_{i<j} \operatorname{ReLU}(\theta_i), \qquad
        \gamma^{\text{high}}_j = \sum_{i<j} \operatorname{ReLU}(\theta_i),

    .. math::
        g(\tilde L) X = \sum_{k=0}^{K} w_k T_k(\tilde L) X, \qquad
        w_k = \frac{2 - \delta_{k0}}{K + 1} \sum_{j=0}^{K} \gamma_j T_k(x_j),

    by :math:`K` propagations of the recursion :math:`T_k = 2\tilde L T_{k-1} - T_{k-2}`;
    :math:`g(x_j) = \gamma_j` exactly. As an energy step (the package's contract),

    .. math::
        E(X) = \tfrac12 \operatorname{tr}\big(X^\top (I - g(\tilde L)) X\big), \qquad
        X' = X - \alpha \nabla E(X) = (1 - \alpha) X + \alpha\, g(\tilde L) X,

    so ``step=1`` is the filter. :math:`\theta` starts at :math:`2/K`: both filters start
    near linear in :math:`\lambda`, low-pass :math:`2 - \lambda` and high-pass :math:`\lambda`.
    On a directed graph only the symmetric part is filtered (the authors' code would use the
    source-side degree and a non-symmetric :math:`\tilde L`); isolated nodes have zero rows
    in :math:`\bar A`.

    Args:
        K (int, optional): the polynomial's degree, :math:`K + 1` interpolation nodes
            (default: ``10``).
        pass_band (str, optional): ``"low"`` (:math:`\gamma_0 = 2`, non-increasing) or
            ``"high"`` (:math:`\gamma_0 = 0`, non-decreasing) (default: ``"low"``).
        step (float, optional): step size :math:`\alpha` (default: ``1.0``).
        **kwargs (optional): additional arguments of
            :class:`torch_geometric.nn.conv.MessagePassing`.

    Shapes:
        - **input:** node features :math:`(N, d)`, edge indices :math:`(2, E)` or a sparse
          adjacency ``adj_t`` :math:`(N, N)`, edge weights :math:`(E)` *(optional)*
        - **output:** node features :math:`(N, d)`; :meth:`energy`: scalar
    """

    def __init__(
        self, K: Order = 10, pass_band: PassBand = "low", step: Finite = 1.0, **kwargs
    ) -> None:
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        self.K, self.pass_band, self.step = K, pass_band, step
        check_options(self)
        self.theta = torch.nn.Parameter(torch.empty(K))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        torch.nn.init.constant_(self.theta, 2.0 / self.K)

    def gamma(self) -> Tensor:
        """The filter's values at the interpolation nodes, :math:`(K + 1)`."""
        return interpolation_values(self.theta, self.pass_band)

    def coefficients(self) -> Tensor:
        """The Chebyshev coefficients :math:`w_0 \\dots w_K` (the first one halved)."""
        return chebyshev_coefficients(self.gamma())

    def laplacian(
        self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """``(edge_index, weights)`` of :math:`\\tilde L = -\\tfrac12(\\bar A + \\bar A^\\top)`,
        each pair once."""
        n = x.size(0)
        edge_index, edge_weight = as_edge_index(
            edge_index, edge_weight, n, allow_empty=True, non_negative=True
        )
        # as get_laplacian: a self-loop is no edge of L and counts in no degree
        edge_index, edge_weight = remove_self_loops(edge_index, edge_weight)
        if edge_weight is not None:
            edge_weight = edge_weight.to(x.dtype)
        edge_index, weight = gcn_norm(
            edge_index, edge_weight, n, add_self_loops=False, dtype=x.dtype
        )
        both = torch.cat([edge_index, edge_index.flip(0)], dim=1)
        both, weight = coalesce(both, torch.cat([weight, weight]) / 2, n)
        return both, -weight

    def filter(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """:math:`g(\\tilde L) X`."""
        check_options(self)
        check_features(x)
        return self.filter_on(x, self.laplacian(x, edge_index, edge_weight))

    def filter_on(self, x: Tensor, laplacian: tuple[Tensor, Tensor]) -> Tensor:
        """:math:`g(\\tilde L) X` on :meth:`laplacian`'s output (one normalisation of the
        graph for many calls: PolyGCL filters four inputs per step)."""
        graph, weight = laplacian
        w = self.coefficients().to(x.dtype)
        previous, current = x, self.propagate(graph, x=x, edge_weight=weight)
        out = w[0] * previous + w[1] * current
        for k in range(2, self.K + 1):
            previous, current = (
                current,
                2 * self.propagate(graph, x=current, edge_weight=weight) - previous,
            )
            out = out + w[k] * current
        return out

    def energy(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """:math:`\\tfrac12 \\operatorname{tr}(X^\\top (I - g(\\tilde L)) X)` (a sum)."""
        return 0.5 * ((x * x).sum() - (x * self.filter(x, edge_index, edge_weight)).sum())

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        filtered = self.filter(x, edge_index, edge_weight)
        if self.step == 1:
            return filtered
        return (1 - self.step) * x + self.step * filtered

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(K={self.K}, pass_band={self.pass_band!r}, step={self.step})"
        )

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        x = _examples.features(n, d, generator)
        graph = _examples.weighted_graph(n, generator)
        return {
            band: Example(partial(cls, K=4, pass_band=band, step=0.7), (x, *graph))
            for band in ("low", "high")
        }
