"""Deep Graph Infomax's loss: a bilinear discriminator tells the nodes of the graph from
those of a corrupted graph, each scored against the graph's summary."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import check_features, check_same_shape


def deep_graph_infomax(
    h: Tensor, corrupted: Tensor, weight: Tensor, bias: Tensor | None = None
) -> Tensor:
    r"""Deep Graph Infomax's loss: with the summary :math:`s = \sigma(\frac{1}{N} \sum_i
    h_i)` of the graph's node embeddings and the bilinear discriminator
    :math:`D(h, s) = h^\top W s + b`, the binary cross-entropy of the nodes (label 1)
    against the corrupted graph's nodes :math:`\tilde h_i` (label 0), over all :math:`2N`
    scores,

    .. math::
        \mathcal{L} = \frac{1}{2N} \sum_i \Big(\log\big(1 + e^{-D(h_i, s)}\big)
                    + \log\big(1 + e^{D(\tilde h_i, s)}\big)\Big).

    Functional form of :class:`DeepGraphInfomaxLoss`.

    Shapes: ``h, corrupted`` :math:`(N, d)`, ``weight`` :math:`(d, d)`, ``bias`` a
    scalar; output: scalar.
    """
    check_features(h, "h")
    check_features(corrupted, "corrupted")
    check_same_shape(h, corrupted, ("h", "corrupted"))
    d = h.size(1)
    if weight.shape != (d, d):
        raise ValueError(f"weight must have shape ({d}, {d}), got {tuple(weight.shape)}")
    summary = torch.sigmoid(h.mean(0))
    direction = weight @ summary  # D(h, s) = h · (W s): one product per row
    positive, negative = h @ direction, corrupted @ direction
    if bias is not None:
        positive, negative = positive + bias, negative + bias
    return 0.5 * (F.softplus(-positive).mean() + F.softplus(negative).mean())


class DeepGraphInfomaxLoss(torch.nn.Module):
    r"""Deep Graph Infomax's loss (Veličković et al., *Deep Graph Infomax*, ICLR 2019): a
    bilinear discriminator :math:`D(h, s) = h^\top W s + b` scores every node against the
    graph's summary :math:`s = \sigma(\frac{1}{N} \sum_i h_i)`, and the binary
    cross-entropy tells the graph's nodes from a corrupted graph's
    (:func:`deep_graph_infomax`),

    .. math::
        \mathcal{L} = \frac{1}{2N} \sum_i \Big(\log\big(1 + e^{-D(h_i, s)}\big)
                    + \log\big(1 + e^{D(\tilde h_i, s)}\big)\Big).

    The discriminator's :math:`W` and :math:`b` are the module's parameters, trained with
    the encoder, initialised as the authors' ``nn.Bilinear`` (Xavier-uniform over its
    ``(1, d, d)`` weight, bias zero).

    In the message-passing reading the summary is a virtual node joined to every node, a
    star graph: the positive term aligns each node with the virtual node under the
    bilinear similarity, the corrupted nodes are the negatives pushed away from it.

    Args:
        dim (int): the width :math:`d` of the node embeddings.

    Shapes:
        - **input:** ``h, corrupted`` :math:`(N, d)`
        - **output:** scalar

    Examples:
        >>> loss_fn = DeepGraphInfomaxLoss(dim=512)
        >>> permutation = torch.randperm(x.size(0))
        >>> loss = loss_fn(encoder(x, edge_index), encoder(x[permutation], edge_index))
    """

    functional = staticmethod(deep_graph_infomax)

    def __init__(self, dim: int) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be an integer >= 1, got {dim!r}")
        self.dim = dim
        self.weight = torch.nn.Parameter(torch.empty(dim, dim))
        self.bias = torch.nn.Parameter(torch.empty(()))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Xavier-uniform of nn.Bilinear's (1, d, d) weight: fan-in d·d, fan-out d
        bound = math.sqrt(6.0 / (self.dim * self.dim + self.dim))
        torch.nn.init.uniform_(self.weight, -bound, bound)
        torch.nn.init.zeros_(self.bias)

    def forward(self, h: Tensor, corrupted: Tensor) -> Tensor:
        return self.functional(h, corrupted, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
