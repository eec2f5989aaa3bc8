"""The local–global loss of DGI and MVGRL: a bilinear discriminator tells (node, summary)
pairs from (corrupted node, summary) pairs, by binary cross-entropy."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from .._options import checks_options
from .._validation import check_features, check_same_shape
from ._inputs import FunctionalLoss


@checks_options()
def local_global_loss(
    positive: Tensor, negative: Tensor, summary: Tensor, weight: Tensor, bias: Tensor | None
) -> Tensor:
    r"""The local–global mutual-information bound of DGI (Veličković et al., *Deep Graph
    Infomax*, ICLR 2019) and MVGRL (Hassani & Khasahmadi, *Contrastive Multi-View
    Representation Learning on Graphs*, ICML 2020), as their code computes it: each node
    scored against the graph's summary :math:`s` by the bilinear discriminator
    :math:`D(h, s) = h^\top W s + b`, and binary cross-entropy with the nodes as positives
    and their corruptions (the encoder on row-shuffled features) as negatives,

    .. math::
        \mathcal{L} = \frac{1}{2N} \sum_i \Big[
            -\log \sigma\big(D(h_i, s)\big) - \log\big(1 - \sigma(D(\tilde h_i, s))\big)
        \Big].

    DGI passes the graph's nodes and their own summary :math:`s = \sigma(\frac{1}{N}
    \sum_i h_i)`, the corruption its feature rows shuffled over the nodes; MVGRL one view's
    nodes and the *other* view's summary (the graph's against its diffusion's), and averages
    the two directions. In the message-passing reading it is
    alignment of every node with a virtual summary node (the star graph to it, through
    :math:`W`), the corrupted nodes pushed away from it in place of uniformity.

    Functional form of :class:`LocalGlobalLoss`.

    Shapes: ``positive, negative`` :math:`(N, d)`, ``summary`` :math:`(d)`, ``weight``
    :math:`(d, d)`, ``bias`` scalar, :math:`(1)` or ``None``; output: scalar.
    """
    check_features(positive, "positive")
    check_features(negative, "negative")
    check_same_shape(positive, negative, ("positive", "negative"))
    d = positive.size(1)
    if summary.shape != (d,):
        raise ValueError(f"summary must have shape ({d},), got {tuple(summary.shape)}")
    if weight.shape != (d, d):
        raise ValueError(f"weight must have shape ({d}, {d}), got {tuple(weight.shape)}")
    scored = weight @ summary
    logits = torch.cat([positive @ scored, negative @ scored])
    if bias is not None:
        logits = logits + bias.reshape(())
    labels = torch.cat(
        [torch.ones_like(logits[: len(positive)]), torch.zeros_like(logits[: len(negative)])]
    )
    return F.binary_cross_entropy_with_logits(logits, labels)


class LocalGlobalLoss(FunctionalLoss):
    r"""DGI's and MVGRL's local–global loss (Veličković et al., *Deep Graph Infomax*, ICLR
    2019; Hassani & Khasahmadi, *Contrastive Multi-View Representation Learning on Graphs*,
    ICML 2020) with its bilinear discriminator :math:`D(h, s) = h^\top W s + b`, its
    parameters :math:`W` and :math:`b` initialised as their code's ``nn.Bilinear(d, d, 1)``
    (Xavier-uniform weight, zero bias) and trained with the encoder
    (:func:`local_global_loss`),

    .. math::
        \mathcal{L} = \frac{1}{2N} \sum_i \Big[
            -\log \sigma\big(D(h_i, s)\big) - \log\big(1 - \sigma(D(\tilde h_i, s))\big)
        \Big].

    It has no options: its width sizes the discriminator's parameters.

    Args:
        dim (int): the width of the node embeddings and the summary.

    Shapes:
        - **input:** ``positive, negative`` :math:`(N, d)`, ``summary`` :math:`(d)`
        - **output:** scalar

    Examples:
        >>> loss_fn = LocalGlobalLoss(64)
        >>> h, h_corrupt = torch.randn(100, 64), torch.randn(100, 64)
        >>> loss = loss_fn(h, h_corrupt, torch.sigmoid(h.mean(0)))
    """

    functional = staticmethod(local_global_loss)

    def __init__(self, dim: int) -> None:
        torch.nn.Module.__init__(self)
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

    def forward(self, positive: Tensor, negative: Tensor, summary: Tensor) -> Tensor:
        return self.functional(positive, negative, summary, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
