"""GraphACL's loss: a prediction aligned with its neighbors' targets, against sampled
negatives."""

from __future__ import annotations

import torch
from torch import Tensor

from .._options import Temperature, checks_options
from .._validation import as_edge_index, check_features, check_same_shape, read_values
from ..nn._graph import edge_dot
from ._inputs import FunctionalLoss


@checks_options()
def graphacl_loss(
    p: Tensor,
    u: Tensor,
    z: Tensor,
    positives: Tensor,
    temperature: Temperature = 0.5,
    negatives: Tensor | None = None,
) -> Tensor:
    r"""GraphACL's loss: anchor ``i``'s unit-norm prediction ``p_i`` and online embedding
    ``z_i``, the unit-norm target embeddings ``u`` of every row; each positive edge
    ``k -> i`` (a neighbor ``k`` of anchor ``i``) contributes

    .. math::
        \log\Big(e^{p_i^\top u_k / \tau} + \sum_{j \in Q_i} e^{z_i^\top z_j / \tau}\Big)
        - p_i^\top u_k / \tau,

    averaged over each anchor's positives and then over the anchors that have any. The
    negatives :math:`Q_i` are ``negatives[i]`` (anchor indices: GraphACL's sampled
    negatives) or, with ``None``, every anchor (its dense form, ``j = i`` included).

    Functional form of :class:`GraphACLLoss`.

    Shapes: ``p, z`` :math:`(S, d)` (the anchors), ``u`` :math:`(R, d)`, ``positives``
    :math:`(2, E)` (sources in ``0 … R-1``, targets in ``0 … S-1``), ``negatives``
    :math:`(S, K)`; output: scalar.
    """
    for name, value in (("p", p), ("u", u), ("z", z)):
        check_features(value, name)
    check_same_shape(p, z, ("p", "z"))
    if u.size(1) != z.size(1):
        raise ValueError(f"u and z must have the same width, got {u.size(1)} and {z.size(1)}")
    anchors = z.size(0)
    positives, _ = as_edge_index(positives, None, u.size(0), allow_empty=True)
    if read_values() and positives.numel() and int(positives[1].max()) >= anchors:
        raise ValueError(
            f"positives: a target {int(positives[1].max())} is not one of the {anchors} anchors"
        )
    if negatives is not None:
        if negatives.dim() != 2 or negatives.size(0) != anchors or negatives.is_floating_point():
            raise ValueError(
                f"negatives must be integers [{anchors}, K], got {tuple(negatives.shape)} "
                f"{negatives.dtype}"
            )
        out_of_range = read_values() and negatives.numel()
        if out_of_range and (int(negatives.min()) < 0 or int(negatives.max()) >= anchors):
            raise ValueError(f"negatives must index the {anchors} anchors")
    anchor = positives[1]
    positive = edge_dot(p, u, positives) / temperature
    if negatives is None:
        negative = torch.logsumexp(z @ z.T / temperature, dim=1)
    else:
        negative = torch.logsumexp((z[:, None, :] * z[negatives]).sum(-1) / temperature, dim=1)
    per_edge = torch.logaddexp(positive, negative[anchor]) - positive
    count = torch.bincount(anchor, minlength=anchors)
    per_anchor = torch.zeros(anchors, dtype=per_edge.dtype, device=z.device).index_add(
        0, anchor, per_edge / count[anchor]
    )
    return per_anchor[count > 0].mean()


class GraphACLLoss(FunctionalLoss):
    r"""GraphACL's loss (Xiao et al., *Simple and Asymmetric Graph Contrastive Learning
    without Augmentations*, NeurIPS 2023): each anchor's unit-norm prediction ``p_i`` is
    aligned, through InfoNCE, with the unit-norm target embedding ``u_k`` of each of its
    graph neighbors ``k``, against the online embeddings ``z_j`` of negatives
    (:func:`graphacl_loss`),

    .. math::
        \ell_{k \to i} = \log\Big(e^{p_i^\top u_k / \tau}
        + \sum_{j \in Q_i} e^{z_i^\top z_j / \tau}\Big) - p_i^\top u_k / \tau,

    averaged over each anchor's neighbors, then over the anchors. In the message-passing
    reading: :class:`~cl2gnn.nn.AlignConv` on the input graph through an asymmetric
    predictor, minus :class:`~cl2gnn.nn.UniformAttention` over sampled keys.

    Args:
        temperature (float, optional): :math:`\tau` (default: ``0.5``).

    Shapes:
        - **input:** ``p, z`` :math:`(S, d)`, ``u`` :math:`(R, d)`, ``positives``
          :math:`(2, E)` (neighbor ``→`` anchor), ``negatives`` :math:`(S, K)` *(optional;
          default: every anchor)*
        - **output:** scalar

    Examples:
        >>> loss = GraphACLLoss(temperature=0.5)(p, u, z, edge_index)
    """

    functional = staticmethod(graphacl_loss)

    def forward(
        self, p: Tensor, u: Tensor, z: Tensor, positives: Tensor, negatives: Tensor | None = None
    ) -> Tensor:
        return self.call_functional(p, u, z, positives, negatives=negatives)
