from __future__ import annotations

from functools import partial
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import is_undirected, softmax

from .._checks import one_of
from .._options import Finite, OptionsChecked, Temperature, TileSize, check_options
from .._registry import OPERATORS, Example
from .._validation import as_edge_index, as_keys, check_features
from ..distributed.partition import masked_logits
from . import _dispatch, _examples
from ._graph import edge_dot
from .sampled import sampled_logits
from .tiled_attention import tiled_attention
from .uniform import UniformAttention

NORMS = ("layer", None)


@OPERATORS.register
class ContrastiveNorm(OptionsChecked, MessagePassing):
    r"""ContraNorm (*ContraNorm: A Contrastive Learning Perspective on Oversmoothing and
    Beyond*, Guo et al., ICLR 2023, eqs. 5-6): :class:`UniformAttention`'s stop-gradient
    step followed by a LayerNorm, a normalisation layer that spreads features apart where
    message passing pulls them together (oversmoothing).

    With :math:`U = X` or, with ``normalize=True``, the :math:`\ell_2`-normalised rows of
    :math:`X` (ContraNorm computes its similarities on the sphere), attention
    :math:`P = \operatorname{softmax}_{\text{row}}(U U^\top / \tau)` over the affinity
    graph (complete by default; self pairs kept unless ``self_loops=False``) and rate
    :math:`s = \alpha / \tau`:

    .. math::
        X' = \operatorname{LayerNorm}\left((1 + s) X - s P X\right)
           = \operatorname{LayerNorm}\left(X - \alpha \nabla E(X)\right),

    where :math:`E` is the stop-gradient energy of :class:`UniformAttention` (eq. 8),
    :math:`E(X) = \sum_i \operatorname{LSE}_j \frac{x_i^\top \operatorname{sg}(x_j)}{\tau}
    - \sum_i \frac{\|x_i\|^2}{2\tau}` (:meth:`energy`). The second equality is exact when
    the logits are those of :math:`X` itself: ``normalize=False``, or rows of unit norm.
    ContraNorm's scale :math:`s` is ``step / temperature``; its published form
    (``identity=True`` in the authors' code, the form of its GNN experiments) is this one,
    with the temperature :math:`\tau = 1`, similarities on normalised rows and, in the GNN
    code, the input graph's edges and self pairs removed from the affinity graph (pass
    them as ``exclude_index`` with ``self_loops=False``). With ``learnable_step`` the rate
    is a per-channel parameter :math:`s_c` (initialised to :math:`\alpha / \tau`), a
    diagonally preconditioned step of the same energy; the authors' learnable variant
    drops the identity term, this one keeps it.

    Reference code: https://github.com/PKU-ML/ContraNorm (``gnn/layers.py``,
    ``NormLayer`` mode ``CN``; the Transformer layer ``ContraNorm``).

    Args:
        channels (int): feature width :math:`d` (of the LayerNorm and the learnable rate).
        step (float, optional): step size :math:`\alpha` (default: ``1.0``, so
            :math:`s = 1` at :math:`\tau = 1`, the authors' example setting for deep GCNs).
        temperature (float, optional): :math:`\tau > 0` (default: ``1.0``, ContraNorm's).
        normalize (bool, optional): similarities between :math:`\ell_2`-normalised rows
            (default: ``True``, ContraNorm's).
        self_loops (bool, optional): keep :math:`i = j` in the implicit complete affinity
            graph (default: ``True``).
        learnable_step (bool, optional): a learnable per-channel rate (default: ``False``).
        norm (str, optional): ``"layer"`` (``torch.nn.LayerNorm``, affine, eps
            ``1e-6`` as ContraNorm's) or ``None`` (the step alone) (default: ``"layer"``).
        implementation (str, optional): attention over the complete graph computed
            ``"dense"`` (``N × N`` memory), ``"tiled"`` (exact, ``O(N d + tile²)`` memory,
            :func:`~cl2gnn.nn.tiled_attention.tiled_attention`) or ``"auto"``, the faster
            of the two for the device and size (:func:`~cl2gnn.nn._dispatch.exact_form`:
            on CUDA dense while it fits in memory, on the CPU tiled from a measured size on)
            (default: ``"auto"``).
        tile_size (int, optional): block size of the tiled attention (default: ``1024``).
        **kwargs (optional): additional arguments of
            :class:`torch_geometric.nn.conv.MessagePassing`.

    Shapes:
        - **input:** features :math:`(N, d)`; optional sparse affinity ``edge_index``
          :math:`(2, E)` (``j -> i`` makes ``j`` a key of anchor ``i``), ``exclude_index``
          :math:`(2, E')` of symmetric pairs removed from the complete graph (e.g. the
          input graph, as in ContraNorm's GNNs), or sampled ``keys`` :math:`(K)`
        - **output:** features :math:`(N, d)`; :meth:`energy`: scalar
    """

    def __init__(
        self,
        channels: int,
        step: Finite = 1.0,
        temperature: Temperature = 1.0,
        normalize: bool = True,
        self_loops: bool = True,
        learnable_step: bool = False,
        norm: str | None = "layer",
        implementation: Annotated[
            str, one_of("auto", *_dispatch.COMPUTATIONS["attention"])
        ] = "auto",
        tile_size: TileSize = 1024,
        **kwargs,
    ) -> None:
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        if not isinstance(channels, int) or channels < 1:
            raise ValueError(f"channels must be a positive int, got {channels!r}")
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
        self.channels = channels
        self.step = step
        self.temperature = temperature
        self.normalize = normalize
        self.self_loops = self_loops
        self.implementation = implementation
        self.tile_size = tile_size
        check_options(self)
        self.rate = torch.nn.Parameter(torch.empty(channels)) if learnable_step else None
        self.norm = torch.nn.LayerNorm(channels, eps=1e-6) if norm == "layer" else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.rate is not None:
            torch.nn.init.constant_(self.rate, self.step / self.temperature)
        if self.norm is not None:
            self.norm.reset_parameters()

    def step_size(self) -> Tensor | float:
        r"""The step :math:`\alpha` of the energy: ``step``, or per channel
        :math:`\tau s_c` with ``learnable_step``."""
        return self.step if self.rate is None else self.rate * self.temperature

    def uniform(self) -> UniformAttention:
        """The :class:`UniformAttention` whose stop-gradient energy this layer steps on."""
        return UniformAttention(
            self.step,
            self.temperature,
            stop_gradient=True,
            self_loops=self.self_loops,
            implementation=self.implementation,
            tile_size=self.tile_size,
        )

    def energy(
        self,
        x: Tensor,
        edge_index: Tensor | None = None,
        *,
        exclude_index: Tensor | None = None,
        keys: Tensor | None = None,
    ) -> Tensor:
        self._check(x)
        return self.uniform().energy(x, edge_index, exclude_index=exclude_index, keys=keys)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor | None = None,
        *,
        exclude_index: Tensor | None = None,
        keys: Tensor | None = None,
    ) -> Tensor:
        self._check(x)
        u = F.normalize(x, dim=-1) if self.normalize else x
        attended = self._attend(u, x, edge_index, exclude_index, keys)
        rate = self.step / self.temperature if self.rate is None else self.rate.to(x.dtype)
        out = x + rate * (x - attended)
        return out if self.norm is None else self.norm(out)

    def _attend(
        self,
        u: Tensor,
        x: Tensor,
        edge_index: Tensor | None,
        exclude_index: Tensor | None,
        keys: Tensor | None,
    ) -> Tensor:
        """:math:`P X` with :math:`P` the softmax of the logits of ``u``; ``0`` for a row
        without keys."""
        n = x.size(0)
        if sum(arg is not None for arg in (edge_index, exclude_index, keys)) > 1:
            raise ValueError("pass at most one of edge_index, exclude_index and keys")
        if keys is not None:
            keys = as_keys(keys, n)
            logits = sampled_logits(u, keys, self.temperature, self.self_loops)
            attn = torch.nan_to_num(torch.softmax(logits, dim=1)).to(x.dtype)
            return attn @ x.index_select(0, keys)
        if edge_index is not None:
            edge_index, _ = as_edge_index(edge_index, None, n)
            dst = edge_index[1]
            attn = softmax(edge_dot(u, u, edge_index) / self.temperature, dst, num_nodes=n)
            return self.propagate(edge_index, x=x, edge_weight=attn)
        if exclude_index is not None:
            exclude_index, _ = as_edge_index(exclude_index, None, n, allow_empty=True)
        if self._form(u, exclude_index) == "tiled":
            return tiled_attention(
                u, x, self.temperature, self.self_loops, exclude_index, self.tile_size
            )
        logits = masked_logits(u @ u.T / self.temperature, 0, self.self_loops, exclude_index)
        return torch.nan_to_num(torch.softmax(logits, dim=1)) @ x

    def _form(self, u: Tensor, exclude_index: Tensor | None) -> str:
        """``implementation``, or under ``"auto"`` the library's rule."""
        if self.implementation == "auto":
            return _dispatch.exact_form(
                u.size(0),
                u.size(1),
                u.device,
                u.dtype,
                exclude_index=exclude_index,
                computation="attention",
            )
        if self.implementation == "tiled" and exclude_index is not None:
            if not is_undirected(exclude_index, num_nodes=u.size(0)):
                raise ValueError("the tiled attention needs a symmetric exclude_index")
        return self.implementation

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j

    def _check(self, x: Tensor) -> None:
        check_options(self)
        check_features(x, min_rows=1 if self.self_loops else 2)
        if x.size(1) != self.channels:
            raise ValueError(f"x must have {self.channels} channels, got {x.size(1)}")

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}({self.channels}, step={self.step}, "
            f"temperature={self.temperature}, normalize={self.normalize}, "
            f"self_loops={self.self_loops}, learnable_step={self.rate is not None}, "
            f"norm={'layer' if self.norm is not None else None!r})"
        )

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        """The step alone (no LayerNorm, logits of ``x`` itself), where ``forward`` is
        exactly ``x - step * grad(energy)``."""
        x = _examples.features(n, d, generator)
        return {
            "step": Example(
                partial(cls, d, step=0.3, temperature=0.5, normalize=False, norm=None), (x,)
            )
        }
