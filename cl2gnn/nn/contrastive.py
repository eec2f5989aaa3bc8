from __future__ import annotations

import torch
from torch import Tensor

from .align import AlignConv
from .uniform import UniformAttention


class ContrastiveConv(torch.nn.Module):
    r"""The contrastive (InfoNCE) step: alignment minus uniformity (eqs. 9, 10 of *A
    Message Passing Perspective on Learning Dynamics of Contrastive Learning*, Wang et al.,
    ICLR 2023).

    The energy is the sum of the two operators' energies with the temperature folded in,

    .. math::
        E(X) = \tfrac{1}{\tau} \operatorname{tr}(X^\top L X)
             + \sum_i \operatorname{LSE}_{j} \tfrac{x_i^\top x_j}{\tau}
             - \tfrac{1}{\tau}\|X\|_F^2
             = \sum_i \Big(\operatorname{LSE}_{j} S_{ij}
               - \sum_{(k \to i)} \bar{A}_{ik} S_{ik}\Big),

    i.e. the summed InfoNCE loss with positive weights :math:`\bar{A}` (Proposition 1),
    and its exact step is the difference of the augmentation and affinity graphs,

    .. math::
        X' = X + \tfrac{2\alpha}{\tau}\Big(\tfrac{\bar{A} + \bar{A}^\top}{2}
             - \tfrac{P + P^\top}{2}\Big) X.

    Args:
        step (float, optional): step size :math:`\alpha` (default: ``0.1``).
        tau (float, optional): temperature (default: ``0.5``).
        positive_in_denominator (bool, optional): keep the augmentation-graph neighbours
            among the keys of the uniformity term (NT-Xent); ``False`` removes them (the
            decoupled form) (default: ``True``).
        stop_gradient (bool, optional): stop-gradient uniformity (default: ``False``).
        implementation (str, optional): the uniformity energy ``"dense"``, ``"tiled"``,
            ``"triton"`` or ``"auto"``, as in :class:`UniformAttention` (default: ``"auto"``).
        distributed (str, optional): ``"gather"`` or ``"ring"``: the uniformity term's keys
            span every rank's rows, as in :class:`UniformAttention`; the augmentation graph
            (the positives) indexes this rank's rows (default: ``None``).

    Shapes:
        - **input:** features :math:`(N, d)`, augmentation ``edge_index`` :math:`(2, E)`,
          ``edge_weight`` :math:`(E)` *(optional)*, sampled uniformity ``keys``
          :math:`(K)` *(optional, see* :class:`UniformAttention` *)*
        - **output:** features :math:`(N, d)`; :meth:`energy`: scalar
    """

    def __init__(
        self,
        step: float = 0.1,
        tau: float = 0.5,
        positive_in_denominator: bool = True,
        stop_gradient: bool = False,
        implementation: str = "auto",
        distributed: str | None = None,
    ) -> None:
        super().__init__()
        self.step, self.tau = step, tau
        self.positive_in_denominator = positive_in_denominator
        self.align = AlignConv(step=step / tau)
        self.uniform = UniformAttention(
            step=step,
            tau=tau,
            stop_gradient=stop_gradient,
            implementation=implementation,
            distributed=distributed,
        )

    def reset_parameters(self) -> None:
        self.align.reset_parameters()
        self.uniform.reset_parameters()

    def energy(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        keys: Tensor | None = None,
    ) -> Tensor:
        uniform = self.uniform.energy(x, **self._affinity(edge_index, keys))
        return self.align.energy(x, edge_index, edge_weight) / self.tau + uniform

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        keys: Tensor | None = None,
    ) -> Tensor:
        aligned = self.align(x, edge_index, edge_weight)
        return aligned + self.uniform(x, **self._affinity(edge_index, keys)) - x

    def _affinity(self, edge_index: Tensor, keys: Tensor | None) -> dict:
        """The uniformity term's affinity graph: complete, without the positives in the
        decoupled form, or to sampled keys."""
        if keys is not None:
            if not self.positive_in_denominator:
                raise ValueError("sampled keys need positive_in_denominator=True")
            return {"keys": keys}
        return {"exclude_index": None if self.positive_in_denominator else edge_index}

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(step={self.step}, tau={self.tau}, "
            f"positive_in_denominator={self.positive_in_denominator}, "
            f"stop_gradient={self.uniform.stop_gradient}"
            + (f", distributed={self.uniform.distributed!r})" if self.uniform.distributed else ")")
        )
