"""Exact, memory-bounded log-partition of the uniformity term: per row
``lse_i = log Σ_{j≠i} exp(x_i·x_j / τ)`` and its gradient, never forming the ``N × N``
logits.

The logits are symmetric, so only the blocks ``(I, J)``, ``I <= J``, of a ``tile``-sized
partition are computed; each serves the rows of ``I`` and (transposed) those of ``J``:

* forward: one GEMM per block; when ``max ‖x‖² / τ <= 40`` (e.g. unit rows, τ >= 0.025)
  every ``exp(S_ij)`` is a normal float32, so one unshifted ``exp`` per block serves rows
  and columns; otherwise an online (running-max) logsumexp. ``x`` and ``lse`` are saved,
  and in the bounded case also the ``exp`` blocks while they fit in
  :data:`SAVED_BLOCKS_MAX_BYTES` (the backward then skips recomputing them).
* backward, with upstream row weights ``w = ∂L/∂lse``: with the block ``E_IJ`` (saved or
  recomputed), ``Q_IJ = E_IJ ⊙ (u_I + u_J)``, ``u = w exp(-lse) / τ``, gives
  ``grad_I += Q x_J`` and ``grad_J += Qᵀ x_I`` (stop-gradient: ``u_I ⊙ E x_J``).

Loss and gradient cost ``2 N² d`` multiply-adds when recomputing, ``1.5 N² d`` with saved
blocks (a dense implementation ``3 N² d``), and ``O(N d + tile²)`` extra memory beyond the
saved blocks. Low-precision inputs are multiplied in their dtype and reduced in float32.

With ``matmul_dtype="bfloat16"`` (opt-in, CPU) the float32 rows' products (``x_I x_Jᵀ`` and
the ``Q x_J`` ones) are taken in bfloat16 with float32 accumulation and results: oneDNN's
bf16 GEMM (``torch.backends.mkldnn.matmul.fp32_precision = "bf16"``, held for the tiles'
loops only), several times faster than float32 on a CPU with AMX or AVX-512 BF16. The
rows are rounded to bfloat16 (unit roundoff ``2⁻⁸``) inside each product, nothing else:
sums, exponentials and logarithms stay float32. oneDNN keeps some small products (an
inner dimension of 16, for one) and CPUs without bf16 instructions in float32.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Annotated

import torch
from torch import Tensor

from .._checks import one_of, optional
from .._tiles import acc_dtype as _acc_dtype
from .._tiles import online_update as _online_update
from .._tiles import tile_ranges as _ranges

MAX_LOGIT = 40  # exp(±40) and N·exp(40) are normal float32 numbers
SAVED_BLOCKS_MAX_BYTES = 256 * 2**20  # exp blocks kept for the backward up to this size
MATMUL_DTYPES = ("bfloat16",)
# the option, written once: the float32 tiles' products in this dtype (None: float32)
MatmulDtype = Annotated[str | None, optional(one_of(*MATMUL_DTYPES))]


def check_matmul_device(x: Tensor, matmul_dtype: str | None) -> None:
    """The bfloat16 products are oneDNN's: float32 rows on the CPU (other dtypes keep
    theirs)."""
    if matmul_dtype is not None and x.dtype == torch.float32 and x.device.type != "cpu":
        raise ValueError(
            f"matmul_dtype={matmul_dtype!r} is oneDNN's bf16 GEMM for CPU tensors, got a "
            f"{x.device.type} tensor (on CUDA the Triton kernels take it: install triton)"
        )


@contextlib.contextmanager
def _products_in(matmul_dtype: str | None, x: Tensor) -> Iterator[None]:
    """float32 products of ``x``'s tiles in ``matmul_dtype`` while the block is entered."""
    if matmul_dtype is None or x.dtype != torch.float32:
        yield
        return
    matmul = torch.backends.mkldnn.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = "bf16"
    try:
        yield
    finally:
        matmul.fp32_precision = previous


_ROW_NORM = contextvars.ContextVar("row_norm", default=None)
# rows_within's bounds while torch.compile traces (dynamo takes no ContextVar): a stack
# read and written only inside a trace, where the bound becomes a constant of the graph
_TRACED_ROW_NORMS: list[float] = []


@contextlib.contextmanager
def rows_within(norm: float) -> Iterator[None]:
    """Inside the block, the rows the tiles read have norms at most ``norm``, as the caller
    knows (L2-normalised rows: 1): the logits' bound is then known without reading the rows
    back from the device (so ``torch.compile`` traces no read-back either)."""
    if torch.compiler.is_compiling():
        _TRACED_ROW_NORMS.append(float(norm))
        try:
            yield
        finally:
            _TRACED_ROW_NORMS.pop()
        return
    token = _ROW_NORM.set(float(norm))
    try:
        yield
    finally:
        _ROW_NORM.reset(token)


def _row_norm_bound() -> float | None:
    """The innermost :func:`rows_within` bound, ``None`` outside one."""
    if torch.compiler.is_compiling():
        return _TRACED_ROW_NORMS[-1] if _TRACED_ROW_NORMS else None
    return _ROW_NORM.get()


def _bounded(x: Tensor, tau: float) -> bool:
    """Whether every logit satisfies ``|x_i·x_j/τ| <= MAX_LOGIT`` (Cauchy-Schwarz), so
    ``exp`` needs no shift: from the rows' norms, or a bound the caller knows
    (:func:`rows_within`)."""
    norm = _row_norm_bound()
    if norm is None:
        norm = float(x.detach().norm(dim=1).max())
    return norm**2 / tau <= MAX_LOGIT


def _excluded_by_block(exclude: Tensor | None, n: int, tile: int) -> dict:
    """Excluded pairs ``(i, j)``, ``i <= j``, grouped by block, in block coordinates."""
    if exclude is None or exclude.numel() == 0:
        return {}
    i = torch.minimum(exclude[0], exclude[1])
    j = torch.maximum(exclude[0], exclude[1])
    bi, bj = i // tile, j // tile
    key = bi * ((n + tile - 1) // tile) + bj
    order = torch.argsort(key)
    key, i, j, bi, bj = key[order], i[order], j[order], bi[order], bj[order]
    _, counts = torch.unique_consecutive(key, return_counts=True)
    out = {}
    start = 0
    for count in counts.tolist():
        sl = slice(start, start + count)
        block = (int(bi[start]), int(bj[start]))
        out[block] = (i[sl] - block[0] * tile, j[sl] - block[1] * tile)
        start += count
    return out


def _leading(buffer: Tensor, rows: int, cols: int) -> Tensor:
    """A contiguous ``rows × cols`` matrix on the start of ``buffer``'s memory (a ragged
    block's: ``out=`` takes it as it is, where a slice would be strided)."""
    return buffer.view(-1)[: rows * cols].view(rows, cols)


def _mask_block(s: Tensor, diagonal: bool, self_loops: bool, masked: tuple | None) -> Tensor:
    """Block ``s`` with its self pairs (a ``diagonal`` block's, unless ``self_loops``) and
    its ``masked`` ``(rows, cols)`` pairs ``-inf``, in place; on a diagonal block each
    masked pair is stored once, so it is masked both ways."""
    if diagonal and not self_loops:
        s.diagonal().fill_(float("-inf"))
    if masked is not None:
        li, lj = masked
        s[li, lj] = float("-inf")
        if diagonal:
            s[lj, li] = float("-inf")
    return s


class TiledRowLogSumExp(torch.autograd.Function):
    """:func:`tiled_row_logsumexp` as an autograd function, its arguments unchecked (for an
    operator that checked them where it was built): ``apply(x, tau, stop_gradient,
    self_loops, exclude_index, tile, matmul_dtype)``."""

    @staticmethod
    def forward(ctx, x, tau, stop_gradient, self_loops, exclude, tile, matmul_dtype):
        n, acc = x.size(0), _acc_dtype(x.dtype)
        blocks = _excluded_by_block(exclude, n, tile)
        bounded = _bounded(x, tau)
        saved = None
        with _products_in(matmul_dtype, x):
            if not bounded:
                lse = _lse_online(x, tau, self_loops, blocks, tile, acc)
            else:  # E = exp(S): one exp per block serves its rows and columns; the blocks
                # are kept for the backward where they fit
                keep = _block_bytes(n, tile, acc) <= SAVED_BLOCKS_MAX_BYTES
                total = torch.zeros(n, dtype=acc, device=x.device)
                saved = [] if keep else None
                for r, cs, diagonal, block in _symmetric_blocks(
                    x / tau, x, tile, acc, self_loops, blocks, fresh=keep
                ):
                    e = block.exp_()
                    total[r] += e.sum(1)
                    if not diagonal:
                        total[cs] += e.sum(0)
                    if keep:
                        saved.append((r, cs, diagonal, e))
                lse = total.log()
        ctx.save_for_backward(x, lse)
        ctx.settings = (tau, stop_gradient, self_loops, tile, blocks, bounded, saved, matmul_dtype)
        return lse.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_lse):
        # d lse_i / d x = (P x)_i / τ for the query and P_ij x_i / τ for each key j, so the
        # gradient is the weighted attention step with weights w = grad_lse
        x, lse = ctx.saved_tensors
        tau, stop_gradient, self_loops, tile, blocks, bounded, saved, matmul_dtype = ctx.settings
        acc = _acc_dtype(x.dtype)
        has_keys = torch.isfinite(lse)
        weight = torch.where(has_keys, grad_lse.to(acc), torch.zeros_like(lse))
        lse = torch.where(has_keys, lse, torch.full_like(lse, float("inf")))
        args = (x, weight, lse, tau, stop_gradient, self_loops, blocks, tile, acc)
        with _products_in(matmul_dtype, x):
            grad = _grad_bounded(*args, saved) if bounded else _grad_online(*args)
        return grad.to(x.dtype), None, None, None, None, None, None


def _block_bytes(n: int, tile: int, acc: torch.dtype) -> int:
    """Bytes of the blocks ``I <= J`` of an ``n × n`` matrix in ``tile``-sized blocks: half
    the matrix plus half the diagonal blocks."""
    full, rest = divmod(n, tile)
    elements = (n * n + full * tile * tile + rest * rest) // 2
    return elements * torch.finfo(acc).bits // 8


def _addmm(out: Tensor, a: Tensor, b: Tensor) -> None:
    """``out += a @ b``: in place when the dtypes agree, else in ``b``'s dtype."""
    if a.dtype == b.dtype == out.dtype:
        out.addmm_(a, b)
    else:
        out += torch.mm(a.to(b.dtype), b).to(out.dtype)


def _symmetric_blocks(queries, keys, tile, acc, self_loops, excluded, fresh=False):
    """Yield ``(I, J, diagonal, S_IJ)`` for the blocks ``I <= J`` of ``queries keysᵀ``;
    ``S_IJ`` lives in one reused buffer (consume it before the next block) unless
    ``fresh``."""
    n = queries.size(0)
    size = min(tile, n)
    buffer = None if fresh else torch.empty(size, size, dtype=acc, device=queries.device)
    ranges = _ranges(n, tile)
    for a, rows in enumerate(ranges):
        for b in range(a, len(ranges)):
            cols = ranges[b]
            out = buffer
            if fresh:
                out = torch.empty(
                    rows[1] - rows[0], cols[1] - cols[0], dtype=acc, device=queries.device
                )
            # the block's logits in acc precision, masked entries -inf
            q, k = queries[rows[0] : rows[1]], keys[cols[0] : cols[1]].T
            if out.dtype == q.dtype:
                block = torch.mm(q, k, out=_leading(out, q.size(0), k.size(1)))
            else:
                block = torch.mm(q, k).to(acc)
            block = _mask_block(block, a == b, self_loops, excluded.get((a, b)))
            yield slice(*rows), slice(*cols), a == b, block


def _grad_bounded(x, weight, lse, tau, stop_gradient, self_loops, blocks, tile, acc, saved):
    """``grad_i = Σ_j E_ij (u_i + u_j) x_j`` with ``u = w exp(-lse) / τ`` (symmetric);
    the stop-gradient variant keeps ``u_i Σ_j E_ij x_j``."""
    u = torch.exp(-lse) * weight.to(acc) / tau
    grad = torch.zeros(x.size(0), x.size(1), dtype=acc, device=x.device)
    size = min(tile, x.size(0))
    q = torch.empty(size, size, dtype=acc, device=x.device)
    if saved is None:
        recomputed = _symmetric_blocks(x / tau, x, tile, acc, self_loops, blocks)
        saved = ((r, cs, diagonal, block.exp_()) for r, cs, diagonal, block in recomputed)
    for r, cs, diagonal, e in saved:
        if stop_gradient:
            grad[r] += u[r, None] * torch.mm(e.to(x.dtype), x[cs]).to(acc)
            if not diagonal:
                grad[cs] += u[cs, None] * torch.mm(e.T.to(x.dtype), x[r]).to(acc)
            continue
        weights = _leading(q, e.size(0), e.size(1))  # the saved block is left intact
        torch.add(u[r, None], u[None, cs], out=weights).mul_(e)
        _addmm(grad[r], weights, x[cs])
        if not diagonal:
            _addmm(grad[cs], weights.T, x[r])
    return grad


def _lse_online(x, tau, self_loops, blocks, tile, acc):
    """Forward for unbounded logits: a running max per row (flash-attention style)."""
    m = torch.full((x.size(0),), float("-inf"), dtype=acc, device=x.device)
    s = torch.zeros(x.size(0), dtype=acc, device=x.device)
    for r, c, diagonal, block in _symmetric_blocks(x / tau, x, tile, acc, self_loops, blocks):
        if not diagonal:  # the block also serves the rows of J, transposed
            _online_update(m[c], s[c], block, 0, inplace=False)
        _online_update(m[r], s[r], block, 1, inplace=True)
    return s.log() + m  # -inf for rows without keys


def _grad_online(x, weight, lse, tau, stop_gradient, self_loops, blocks, tile, acc):
    scale = weight.to(acc) / tau
    grad = torch.zeros(x.size(0), x.size(1), dtype=acc, device=x.device)
    size = min(tile, x.size(0))
    attn = torch.empty(size, size, dtype=acc, device=x.device)
    for r, c, diagonal, block in _symmetric_blocks(x / tau, x, tile, acc, self_loops, blocks):
        rows_attn = _leading(attn, block.size(0), block.size(1))
        torch.sub(block, lse[r, None], out=rows_attn).exp_().mul_(scale[r, None])  # w_I P_IJ/τ
        if diagonal:
            q = rows_attn if stop_gradient else rows_attn.add_(rows_attn.T.clone())
            _addmm(grad[r], q, x[r])
            continue
        cols_attn = block.sub_(lse[None, c]).exp_().mul_(scale[None, c])  # (w_J P_JI / τ)ᵀ
        if stop_gradient:
            _addmm(grad[r], rows_attn, x[c])
            _addmm(grad[c], cols_attn.T, x[r])
        else:
            q = rows_attn.add_(cols_attn)
            _addmm(grad[r], q, x[c])
            _addmm(grad[c], q.T, x[r])
    return grad


def tiled_row_logsumexp(
    x: Tensor,
    temperature: float,
    stop_gradient: bool = False,
    self_loops: bool = False,
    exclude_index: Tensor | None = None,
    tile_size: int = 1024,
    matmul_dtype: MatmulDtype = None,
) -> Tensor:
    r"""Per row ``log Σ_j exp(x_i·x_j/τ)`` (``[N]``, ``τ = temperature``) over the
    complete graph (self pairs optional, a *symmetric* set of pairs ``exclude_index``
    removed), exact, in ``O(N d + tile²)`` memory; ``-inf`` for a row without keys. With
    ``stop_gradient`` the keys are constants in the gradient. ``matmul_dtype="bfloat16"``:
    float32 rows multiplied in bfloat16 with float32 accumulation (CPU tensors; see the
    module's docstring); ``None``: in the rows' dtype."""
    optional(one_of(*MATMUL_DTYPES))(matmul_dtype, "matmul_dtype")
    check_matmul_device(x, matmul_dtype)
    return TiledRowLogSumExp.apply(
        x,
        float(temperature),
        stop_gradient,
        self_loops,
        exclude_index,
        int(tile_size),
        matmul_dtype,
    )


def tiled_logsumexp(
    x: Tensor,
    temperature: float,
    weight: Tensor | None = None,
    stop_gradient: bool = False,
    self_loops: bool = False,
    exclude_index: Tensor | None = None,
    tile_size: int = 1024,
    matmul_dtype: MatmulDtype = None,
) -> Tensor:
    """``Σ_i w_i lse_i`` of :func:`tiled_row_logsumexp`; rows without keys contribute 0."""
    lse = tiled_row_logsumexp(
        x, temperature, stop_gradient, self_loops, exclude_index, tile_size, matmul_dtype
    )
    lse = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    return lse.sum() if weight is None else (weight.detach().to(lse.dtype) * lse).sum()
