from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated

import torch
from torch import Tensor
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import is_undirected, softmax

from .._checks import one_of
from .._options import Distributed, Finite, OptionsChecked, Temperature, TileSize, check_options
from .._registry import OPERATORS, Example
from .._validation import as_edge_index
from ..distributed import (
    Shard,
    checked_shard,
    gather_rows,
    inner_product,
    is_distributed,
    ring_attention,
    row_logsumexp,
)
from ..distributed.collectives import all_reduce_sum
from ..distributed.partition import masked_logits
from . import _dispatch, _examples
from ._graph import edge_dot, scatter_logsumexp
from ._uniform_inputs import check_inputs
from .sampled import sampled_logits, sampled_row_logsumexp
from .tiled import MatmulDtype, TiledRowLogSumExp, check_matmul_device
from .tiled_triton import triton_row_logsumexp

IMPLEMENTATIONS = ("auto", *_dispatch.FORMS)


@OPERATORS.register
class UniformAttention(OptionsChecked, MessagePassing):
    r"""One gradient step of the uniformity loss: a (reversed) self-attention on the
    affinity graph (eqs. 2b, 7, 8, 12 of *A Message Passing Perspective on Learning
    Dynamics of Contrastive Learning*, Wang et al., ICLR 2023).

    Logits :math:`S_{ij} = x_i^\top x_j / \tau` over the affinity graph (complete by
    default, self pairs optional; sparse when ``edge_index`` is given), attention
    :math:`P = \operatorname{softmax}_{\text{row}}(S)`, anchor weights :math:`w`
    (default ``1``). The symmetric energy (eq. 7) and its exact step are

    .. math::
        E(X) = \sum_i w_i \operatorname{LSE}_j S_{ij} - \sum_i w_i \frac{\|x_i\|^2}{\tau},
        \qquad
        X' = X + \frac{\alpha}{\tau}\left(2 W X - (WP + (WP)^\top) X\right).

    With ``stop_gradient=True`` the keys are detached, :math:`S_{ij} = x_i^\top
    \operatorname{sg}(x_j)/\tau` (eq. 8):

    .. math::
        E(X) = \sum_i w_i \operatorname{LSE}_j S_{ij} - \sum_i w_i \frac{\|x_i\|^2}{2\tau},
        \qquad
        X' = (I + \tfrac{\alpha}{\tau} W) X - \tfrac{\alpha}{\tau} W P X,

    so ``step=-temperature`` gives softmax self-attention :math:`X' = P X` (eq. 12). Energies are
    sums over anchors; an anchor with no affinity edges contributes only the norm term.
    The :math:`-\|x\|^2` terms make :math:`\frac{1}{\tau}` ``AlignConv.energy`` plus this
    energy exactly InfoNCE (Proposition 1).

    With ``keys`` (a set :math:`K` of row indices, e.g. a fresh random sample each step)
    the affinity graph links every anchor to the keys only, and each anchor's sum is
    scaled up to its complete-graph size (:math:`N` keys with ``self_loops``),
    :math:`\operatorname{LSE}_{j \in K \setminus i} S_{ij} + \log \frac{N - 1}{|K \setminus i|}`,
    so that its exponential is an unbiased estimate of the complete graph's partition
    sum (neighbor sampling on the affinity graph, as GraphSAGE samples a graph): the
    logits cost :math:`N |K| d` instead of :math:`N^2 d` (``N × K`` memory, by
    :func:`~cl2gnn.nn.sampled.sampled_row_logsumexp` whatever ``implementation``). The
    scale is a constant, so the step keeps the form above with :math:`P` the softmax over
    the keys.

    Args:
        step (float, optional): step size :math:`\alpha` (default: ``0.1``).
        temperature (float, optional): :math:`\tau > 0` (default: ``0.5``).
        stop_gradient (bool, optional): detach the keys (default: ``False``).
        self_loops (bool, optional): keep :math:`i = j` in the implicit complete affinity
            graph (default: ``False``).
        implementation (str, optional): energy of the complete graph computed
            ``"dense"`` (``O(N²)`` memory), ``"tiled"`` (exact, ``O(N d + tile²)`` memory,
            :func:`~cl2gnn.nn.tiled.tiled_logsumexp`), ``"triton"`` (the fused CUDA
            kernels of :mod:`~cl2gnn.nn.tiled_triton`, ``O(N d)`` memory, no
            ``exclude_index``) or ``"auto"``: the fastest of them for the call's device,
            size and dtype (:func:`~cl2gnn.nn._dispatch.exact_form`: on CUDA dense while
            it fits in memory, then Triton; on the CPU tiled from a measured size on)
            (default: ``"auto"``).
        tile_size (int, optional): block size of the tiled energy and of the ring
            (default: ``1024``).
        distributed (str, optional): under an initialised process group, the complete
            affinity graph spans the rows of every rank: ``"gather"`` (all-gathered keys,
            ``N/P × N`` logits per rank) or ``"ring"`` (keys passed rank to rank,
            ``O(N d / P + tile²)`` memory, forward and backward), see
            :mod:`cl2gnn.distributed`; :meth:`energy` is then this rank's anchors' share
            and its gradient on the local rows the global energy's; :meth:`forward` is this
            rank's rows of the global step, with the gradient of the single-process step
            (in ring mode by :func:`~cl2gnn.distributed.ring.ring_attention`). Every rank's
            input checks are decided together: one rank's invalid input raises on every
            rank. ``None``: this process's rows only (default: ``None``).
        matmul_dtype (str, optional): ``"bfloat16"``: the complete graph's log-partition
            multiplies float32 rows in bfloat16 with float32 accumulation, in the torch
            tiles on the CPU (oneDNN; several times faster, rounding the rows to 8
            significant bits inside each product, see :mod:`~cl2gnn.nn.tiled`), in the
            Triton kernels on CUDA (:mod:`~cl2gnn.nn._triton_plan`); it takes
            ``implementation`` ``"auto"`` (then those), ``"tiled"`` or ``"triton"``, no
            ``distributed``. ``None``: products in the rows' dtype, exact; float32 ones on
            CUDA as torch's own switch says (``torch.set_float32_matmul_precision``)
            (default: ``None``).
        **kwargs (optional): additional arguments of
            :class:`torch_geometric.nn.conv.MessagePassing`.

    Shapes:
        - **input:** features :math:`(N, d)`; optional affinity ``edge_index``
          :math:`(2, E)` (``j -> i`` makes ``j`` a key of anchor ``i``), anchor ``weight``
          :math:`(N)`, ``exclude_index`` :math:`(2, E')` of pairs removed from the
          complete graph (e.g. positives, for a decoupled denominator), or sampled
          ``keys`` :math:`(K)` of distinct rows
        - **output:** features :math:`(N, d)`; :meth:`energy`: scalar
    """

    def __init__(
        self,
        step: Finite = 0.1,
        temperature: Temperature = 0.5,
        stop_gradient: bool = False,
        self_loops: bool = False,
        implementation: Annotated[str, one_of(*IMPLEMENTATIONS)] = "auto",
        tile_size: TileSize = 1024,
        distributed: Distributed = None,
        matmul_dtype: MatmulDtype = None,
        **kwargs,
    ) -> None:
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        self.implementation = implementation
        self.tile_size = tile_size
        self.step = step
        self.temperature = temperature
        self.stop_gradient = stop_gradient
        self.self_loops = self_loops
        self.distributed = distributed
        self.matmul_dtype = matmul_dtype
        check_options(self)

    def check_joint_options(self) -> None:
        _dispatch.check_matmul_dtype(self.matmul_dtype, self.implementation, self.distributed)

    def reset_parameters(self) -> None:
        super().reset_parameters()

    def energy(
        self,
        x: Tensor,
        edge_index: Tensor | None = None,
        *,
        weight: Tensor | None = None,
        exclude_index: Tensor | None = None,
        keys: Tensor | None = None,
    ) -> Tensor:
        checked = self._check(x, edge_index, weight, exclude_index, keys)
        return self._energy(x, edge_index, checked)

    def _energy(self, x: Tensor, edge_index: Tensor | None, checked: tuple) -> Tensor:
        """:meth:`energy` of inputs that :meth:`_check` passed."""
        _, exclude_index, keys, shard = checked
        lse = self._row_logsumexp(x, edge_index, exclude_index, keys, shard)
        return self._energy_of(x, lse, checked[0])

    def _energy_of(self, x: Tensor, lse: Tensor, weight: Tensor) -> Tensor:
        """The energy from the anchors' log-partitions ``lse`` (a caller that computed them
        calls this after, so that the path to the logits is one frame shorter)."""
        lse_term = (weight * torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))).sum()
        norm_scale = 2.0 if self.stop_gradient else 1.0
        return lse_term - (weight * (x * x).sum(-1)).sum() / (norm_scale * self.temperature)

    def row_logsumexp(
        self,
        x: Tensor,
        edge_index: Tensor | None = None,
        *,
        exclude_index: Tensor | None = None,
        keys: Tensor | None = None,
    ) -> Tensor:
        r"""The per-anchor log-partition :math:`\operatorname{LSE}_j S_{ij}` (``[N]``,
        ``-inf`` for an anchor without keys), differentiable, tiled like :meth:`energy`."""
        _, exclude_index, keys, shard = self._check(x, edge_index, None, exclude_index, keys)
        return self._row_logsumexp(x, edge_index, exclude_index, keys, shard)

    def _row_logsumexp(
        self,
        x: Tensor,
        edge_index: Tensor | None,
        exclude_index: Tensor | None,
        keys: Tensor | None,
        shard: Shard | None,
    ) -> Tensor:
        if keys is not None:
            return self._sampled_row_logsumexp(x, keys)
        if shard is not None:
            return row_logsumexp(
                x,
                inner_product(1.0 / self.temperature),
                self.distributed,
                shard,
                self_loops=self.self_loops,
                exclude_index=exclude_index,
                stop_gradient=self.stop_gradient,
                tile_size=self.tile_size,
            )
        keys = x.detach() if self.stop_gradient else x
        if edge_index is not None:
            edge_index, _ = as_edge_index(edge_index, None, x.size(0))
            logits = edge_dot(x, keys, edge_index) / self.temperature
            return scatter_logsumexp(logits, edge_index[1], x.size(0))
        form = self._form(x, exclude_index)
        if form == "triton":
            return triton_row_logsumexp(
                x, self.temperature, self.stop_gradient, self.self_loops, self.matmul_dtype
            )
        if form == "tiled":  # its options checked with the operator's (check_joint_options)
            check_matmul_device(x, self.matmul_dtype)
            return TiledRowLogSumExp.apply(
                x,
                float(self.temperature),
                self.stop_gradient,
                self.self_loops,
                exclude_index,
                int(self.tile_size),
                self.matmul_dtype,
            )
        return self._dense_row_logsumexp(x, keys, exclude_index)

    def _form(self, x: Tensor, exclude_index: Tensor | None) -> str:
        """The form of the complete graph's log-partition: ``implementation``, or under
        ``"auto"`` the library's rule (:func:`~cl2gnn.nn._dispatch.exact_form`)."""
        if self.implementation == "auto":
            return _dispatch.exact_form(
                x.size(0),
                x.size(1),
                x.device,
                x.dtype,
                exclude_index=exclude_index,
                matmul_dtype=self.matmul_dtype,
            )
        if exclude_index is not None and self.implementation == "triton":
            raise ValueError("the Triton implementation does not take exclude_index")
        if exclude_index is not None and self.implementation == "tiled":
            if not is_undirected(exclude_index, num_nodes=x.size(0)):
                raise ValueError("the tiled energy needs a symmetric exclude_index")
        return self.implementation

    def _dense_row_logsumexp(self, x: Tensor, keys: Tensor, exclude_index: Tensor | None):
        # no host read-back: a row without keys gets -inf, and the NaN that logsumexp's
        # backward puts on its (all masked) logits is zeroed by the mask's index_put
        logits = masked_logits(x @ keys.T / self.temperature, 0, self.self_loops, exclude_index)
        return torch.logsumexp(logits, dim=1)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor | None = None,
        *,
        weight: Tensor | None = None,
        exclude_index: Tensor | None = None,
        keys: Tensor | None = None,
    ) -> Tensor:
        checked = self._check(x, edge_index, weight, exclude_index, keys)
        return self._forward(x, edge_index, checked)

    def _forward(self, x: Tensor, edge_index: Tensor | None, checked: tuple) -> Tensor:
        """:meth:`forward` of inputs that :meth:`_check` passed."""
        weight, exclude_index, keys, shard = checked
        if keys is not None:
            logits = sampled_logits(x, keys, self.temperature, self.self_loops, self.stop_gradient)
            attn = torch.nan_to_num(torch.softmax(logits, dim=1)).to(x.dtype)  # no keys: 0
            attn = attn * weight[:, None]
            attended = attn @ x.index_select(0, keys)
            transposed = None
            if not self.stop_gradient:  # each key collects the anchors attending to it
                # in x's dtype: autocast makes the product half precision
                transposed = torch.zeros_like(x).index_add_(0, keys, (attn.T @ x).to(x.dtype))
        elif shard is not None and self.distributed == "ring":  # keys passed round
            attended, transposed = ring_attention(
                x,
                shard,
                scale=1.0 / self.temperature,
                weight=weight,
                self_loops=self.self_loops,
                exclude_index=exclude_index,
                transposed=not self.stop_gradient,
                tile_size=self.tile_size,
            )
        elif edge_index is None:
            # the keys of every rank gathered with autograd: each key's gradient is the sum
            # of what every rank's anchors send it
            others = x if shard is None else gather_rows(x, shard)
            offset = 0 if shard is None else shard.offset
            attn = torch.softmax(self._dense_logits(x, others, exclude_index, offset), dim=1)
            attn = torch.nan_to_num(attn) * weight[:, None]  # rows without keys -> 0
            attended = attn @ others
            transposed = None
            if not self.stop_gradient:  # what the anchors (of every rank) send each key
                transposed = attn.T @ x
                if shard is not None:
                    transposed = all_reduce_sum(transposed)[offset : offset + shard.rows]
        else:
            edge_index, _ = as_edge_index(edge_index, None, x.size(0))
            dst = edge_index[1]
            attn = softmax(edge_dot(x, x, edge_index) / self.temperature, dst, num_nodes=x.size(0))
            attn = attn * weight[dst]
            attended = self.propagate(edge_index, x=x, edge_weight=attn)
            transposed = (
                self.propagate(edge_index.flip(0), x=x, edge_weight=attn)
                if not self.stop_gradient
                else None
            )
        rate = self.step / self.temperature
        if self.stop_gradient:
            return x + rate * (weight[:, None] * x - attended)
        return x + rate * (2 * weight[:, None] * x - attended - transposed)

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j

    def _check(
        self,
        x: Tensor,
        edge_index: Tensor | None,
        weight: Tensor | None,
        exclude_index: Tensor | None,
        keys: Tensor | None = None,
        also: Callable[[], object] | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None, Shard | None]:
        """The checked ``(weight, exclude_index, keys)`` and, across ranks, this rank's
        shard; ``also``: further checks of the caller's inputs (e.g. a
        :class:`~cl2gnn.nn.ContrastiveConv`'s augmentation graph). Across ranks every
        rank's checks are decided together, with the row counts, before any other
        collective (:func:`~cl2gnn.distributed.shard.checked_shard`)."""
        check_options(self)
        distributed = is_distributed(self.distributed)

        def local() -> tuple[Tensor, Tensor | None, Tensor | None]:
            checked = check_inputs(
                x, edge_index, weight, exclude_index, keys, distributed, self.self_loops
            )
            if also is not None:
                also()
            return checked

        if not distributed:
            return (*local(), None)
        checked, shard = checked_shard(
            x, local, 1 if self.self_loops else 2, f"UniformAttention ({self.distributed})"
        )
        return (*checked, shard)

    def _sampled_row_logsumexp(self, x: Tensor, keys: Tensor) -> Tensor:
        n, k = x.size(0), keys.numel()
        count = torch.full((n,), float(k), dtype=torch.float64, device=x.device)
        if not self.self_loops:
            count[keys] = k - 1
        complete = n if self.self_loops else n - 1
        scale = torch.log(complete / count.clamp_min(1))  # 0 keys: the lse is -inf anyway
        lse = sampled_row_logsumexp(x, keys, self.temperature, self.stop_gradient, self.self_loops)
        return lse + scale.to(lse.dtype)

    def _dense_logits(
        self, x: Tensor, keys: Tensor, exclude_index: Tensor | None, offset: int = 0
    ) -> Tensor:
        """Logits of the rows of ``x`` against ``keys``, among which ``x`` starts at row
        ``offset``; self and excluded pairs ``-inf``."""
        return masked_logits(x @ keys.T / self.temperature, offset, self.self_loops, exclude_index)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(step={self.step}, temperature={self.temperature}, "
            f"stop_gradient={self.stop_gradient}, self_loops={self.self_loops}, "
            f"implementation={self.implementation!r}"
            + (f", distributed={self.distributed!r}" if self.distributed else "")
            + (f", matmul_dtype={self.matmul_dtype!r})" if self.matmul_dtype else ")")
        )

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        x = _examples.features(n, d, generator)
        edge_index, _ = _examples.weighted_graph(n, generator)
        keys = _examples.keys(n, generator)
        return {
            "complete": Example(partial(cls, step=0.3, temperature=0.5), (x,)),
            "stop_gradient": Example(
                partial(cls, step=0.3, temperature=0.5, stop_gradient=True), (x,)
            ),
            "sparse": Example(partial(cls, step=0.3, temperature=0.5), (x, edge_index)),
            "sampled keys": Example(partial(cls, step=0.3, temperature=0.5), (x,), {"keys": keys}),
        }
