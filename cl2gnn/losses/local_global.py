"""The local–global loss of DGI and MVGRL: a bilinear discriminator tells (node, summary)
pairs from (corrupted node, summary) pairs, by binary cross-entropy."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import check_features, check_same_shape


def local_global_loss(
    positive: Tensor, negative: Tensor, summary: Tensor, weight: Tensor, bias: Tensor | None = None
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

    DGI passes a view's nodes and its own summary; MVGRL one view's nodes and the *other*
    view's summary, and averages the two directions. In the message-passing reading it is
    alignment of every node with a virtual summary node (the star graph to it, through
    :math:`W`), the corrupted nodes pushed away from it in place of uniformity.

    Functional form of :class:`LocalGlobalLoss`.

    Shapes: ``positive, negative`` :math:`(N, d)`, ``summary`` :math:`(d)`, ``weight``
    :math:`(d, d)`, ``bias`` scalar or :math:`(1)`; output: scalar.
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


class LocalGlobalLoss(torch.nn.Module):
    r"""DGI's and MVGRL's local–global loss with its bilinear discriminator
    (``torch.nn.Bilinear(d, d, 1)``, Xavier-uniform weight and zero bias as their code
    initialises it), trained with the encoder; see :func:`local_global_loss`.

    Args:
        dim (int): the width of the node embeddings and the summary.

    Examples:
        >>> loss_fn = LocalGlobalLoss(64)
        >>> h, h_corrupt = torch.randn(100, 64), torch.randn(100, 64)
        >>> loss = loss_fn(h, h_corrupt, torch.sigmoid(h.mean(0)))
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.discriminator = torch.nn.Bilinear(dim, dim, 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        torch.nn.init.xavier_uniform_(self.discriminator.weight)
        torch.nn.init.zeros_(self.discriminator.bias)

    def forward(self, positive: Tensor, negative: Tensor, summary: Tensor) -> Tensor:
        return local_global_loss(
            positive, negative, summary, self.discriminator.weight[0], self.discriminator.bias
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.discriminator.in1_features})"
