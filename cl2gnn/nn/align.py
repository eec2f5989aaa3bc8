from __future__ import annotations

from functools import partial

import torch
from torch import Tensor
from torch_geometric.nn import MessagePassing

from .._options import Finite, OptionsChecked, check_options
from .._registry import OPERATORS, Example
from .._validation import check_features
from . import _examples
from ._graph import edge_dot, normalized_graph


@OPERATORS.register
class AlignConv(OptionsChecked, MessagePassing):
    r"""One gradient step of the alignment loss: a graph convolution on the augmentation
    graph (eqs. 2a, 4, 5 of *A Message Passing Perspective on Learning Dynamics of
    Contrastive Learning*, Wang et al., ICLR 2023).

    With :math:`\bar{A} = D^{-1/2} A D^{-1/2}` and :math:`L = I - \bar{A}`, the energy is
    the Dirichlet energy

    .. math::
        E(X) = \operatorname{tr}(X^\top L X)
             = \sum_i \|x_i\|^2 - \sum_{(j \to i)} \bar{A}_{ij}\, x_i^\top x_j,

    and :meth:`forward` is exactly :math:`X - \alpha \nabla E(X)`:

    .. math::
        X' = (1 - 2\alpha) X + 2\alpha\, \tfrac{1}{2}(\bar{A} + \bar{A}^\top) X,

    so ``step=0.5`` gives the GCN propagation :math:`\bar{A} X` on a symmetric graph. The
    energy only sees the symmetric part of a directed graph; ``D`` is the weighted in-degree
    (PyG's ``gcn_norm``) and isolated nodes have zero rows in :math:`\bar{A}`.

    Args:
        step (float, optional): step size :math:`\alpha` (default: ``0.5``).
        **kwargs (optional): additional arguments of
            :class:`torch_geometric.nn.conv.MessagePassing`.

    Shapes:
        - **input:** node features :math:`(N, d)`, edge indices :math:`(2, E)` or a sparse
          adjacency ``adj_t`` :math:`(N, N)`, edge weights :math:`(E)` *(optional)*
        - **output:** node features :math:`(N, d)`; :meth:`energy`: scalar
    """

    def __init__(self, step: Finite = 0.5, **kwargs) -> None:
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        self.step = step
        check_options(self)

    def reset_parameters(self) -> None:
        super().reset_parameters()

    def energy(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """The Dirichlet energy ``tr(xᵀ L x)`` (a sum, not a mean)."""
        check_options(self)
        check_features(x)
        edge_index, weight = normalized_graph(x, edge_index, edge_weight)
        return (x * x).sum() - (weight * edge_dot(x, x, edge_index)).sum()

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        check_options(self)
        check_features(x)
        edge_index, weight = normalized_graph(x, edge_index, edge_weight)
        forward_msg = self.propagate(edge_index, x=x, edge_weight=weight)
        backward_msg = self.propagate(edge_index.flip(0), x=x, edge_weight=weight)
        return (1 - 2 * self.step) * x + self.step * (forward_msg + backward_msg)

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(step={self.step})"

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        x = _examples.features(n, d, generator)
        return {
            "weighted": Example(
                partial(cls, step=0.3), (x, *_examples.weighted_graph(n, generator))
            )
        }
