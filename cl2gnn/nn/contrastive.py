from __future__ import annotations

from functools import partial
from typing import Annotated

import torch
from torch import Tensor

from .._checks import one_of
from .._options import Distributed, Finite, OptionsChecked, Temperature, TileSize, check_options
from .._registry import OPERATORS, Example
from .._validation import as_edge_index
from ..graphs.pair import pair_graph
from . import _examples
from .align import AlignConv
from .tiled import MatmulDtype
from .uniform import IMPLEMENTATIONS, UniformAttention


def _uniform_option(name: str) -> property:
    return property(
        lambda self: getattr(self.uniform, name),
        lambda self, value: setattr(self.uniform, name, value),
        doc=f"``{name}`` of the uniformity operator.",
    )


@OPERATORS.register
class ContrastiveConv(OptionsChecked, torch.nn.Module):
    r"""The contrastive (InfoNCE) step: alignment minus uniformity (eqs. 9, 10 of *A
    Message Passing Perspective on Learning Dynamics of Contrastive Learning*, Wang et al.,
    ICLR 2023).

    It is not itself a ``MessagePassing`` layer but the sum of two: an
    :class:`AlignConv` on the augmentation graph and a :class:`UniformAttention` on the
    affinity graph (held as ``align`` and ``uniform``), whose options it reads and sets.

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
        temperature (float, optional): :math:`\tau` (default: ``0.5``).
        positive_in_denominator (bool, optional): keep the augmentation-graph neighbors
            among the keys of the uniformity term (NT-Xent); ``False`` removes them (the
            decoupled form) (default: ``True``).
        stop_gradient (bool, optional): stop-gradient uniformity (default: ``False``).
        implementation (str, optional): the uniformity energy ``"dense"``, ``"tiled"``,
            ``"triton"`` or ``"auto"``, as in :class:`UniformAttention` (default: ``"auto"``).
        tile_size (int, optional): block size of the tiled uniformity energy and of the
            ring (default: ``1024``).
        distributed (str, optional): ``"gather"`` or ``"ring"``: the uniformity term's keys
            span every rank's rows, as in :class:`UniformAttention` (energy and step, with
            the single-process gradients; ring mode in ``O(N d / P + tile²)`` memory per
            rank); the augmentation graph (the positives) indexes this rank's rows, and is
            checked with the other inputs on every rank before the ranks communicate
            (default: ``None``).
        matmul_dtype (str, optional): ``"bfloat16"``: the uniformity term's products in
            bfloat16 with float32 accumulation, in the torch tiles on the CPU or Triton on
            CUDA, as in :class:`UniformAttention` (default: ``None``, the rows' dtype).

    Shapes:
        - **input:** features :math:`(N, d)`, augmentation ``edge_index`` :math:`(2, E)`,
          ``edge_weight`` :math:`(E)` *(optional)*, sampled uniformity ``keys``
          :math:`(K)` *(optional, see* :class:`UniformAttention` *)*
        - **output:** features :math:`(N, d)`; :meth:`energy`: scalar
    """

    # options held by the uniformity operator, read and set through it so that a change
    # after construction reaches it
    step = _uniform_option("step")
    temperature = _uniform_option("temperature")
    stop_gradient = _uniform_option("stop_gradient")
    implementation = _uniform_option("implementation")
    tile_size = _uniform_option("tile_size")
    distributed = _uniform_option("distributed")
    matmul_dtype = _uniform_option("matmul_dtype")

    def __init__(
        self,
        step: Finite = 0.1,
        temperature: Temperature = 0.5,
        positive_in_denominator: bool = True,
        stop_gradient: bool = False,
        implementation: Annotated[str, one_of(*IMPLEMENTATIONS)] = "auto",
        tile_size: TileSize = 1024,
        distributed: Distributed = None,
        matmul_dtype: MatmulDtype = None,
    ) -> None:
        super().__init__()
        self.positive_in_denominator = positive_in_denominator
        self.align = AlignConv()  # its step, α/τ, is set from the options at each call
        self.uniform = UniformAttention(
            step=step,
            temperature=temperature,
            stop_gradient=stop_gradient,
            implementation=implementation,
            tile_size=tile_size,
            distributed=distributed,
            matmul_dtype=matmul_dtype,
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
        checked = self._check(x, edge_index, edge_weight, keys)
        weight, exclude_index, keys, shard = checked
        lse = self.uniform._row_logsumexp(x, None, exclude_index, keys, shard)
        uniform = self.uniform._energy_of(x, lse, weight)
        return self.align.energy(x, edge_index, edge_weight) / self.temperature + uniform

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_weight: Tensor | None = None,
        keys: Tensor | None = None,
    ) -> Tensor:
        uniform = self.uniform._forward(x, None, self._check(x, edge_index, edge_weight, keys))
        self.align.step = self.step / self.temperature
        return self.align(x, edge_index, edge_weight) + uniform - x

    def _check(
        self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None, keys: Tensor | None
    ) -> tuple:
        """The uniformity term's checked inputs, its affinity graph complete, without the
        positives in the decoupled form, or to sampled keys; the augmentation graph is
        checked with them (across ranks, on every rank together, before any collective)."""
        check_options(self)

        def graph() -> None:
            if keys is not None and not self.positive_in_denominator:
                raise ValueError("sampled keys need positive_in_denominator=True")
            as_edge_index(edge_index, edge_weight, x.size(0))

        exclude_index = None if self.positive_in_denominator or keys is not None else edge_index
        return self.uniform._check(x, None, None, exclude_index, keys, also=graph)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(step={self.step}, temperature={self.temperature}, "
            f"positive_in_denominator={self.positive_in_denominator}, "
            f"stop_gradient={self.stop_gradient}, implementation={self.implementation!r}"
            + (f", distributed={self.distributed!r}" if self.distributed else "")
            + (f", matmul_dtype={self.matmul_dtype!r})" if self.matmul_dtype else ")")
        )

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        x, pairs = _examples.features(n, d, generator), pair_graph(n // 2, 2)
        keys = _examples.keys(n, generator)
        return {
            "views": Example(partial(cls, step=0.2, temperature=0.5), (x, pairs)),
            "decoupled": Example(
                partial(cls, step=0.2, temperature=0.5, positive_in_denominator=False), (x, pairs)
            ),
            "sampled keys": Example(
                partial(cls, step=0.2, temperature=0.5), (x, pairs), {"keys": keys}
            ),
        }
