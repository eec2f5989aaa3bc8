"""The exact log-partition of :mod:`cl2gnn.nn.tiled` as two fused Triton kernels (CUDA).

One program per ``BLOCK_M`` rows streams over all keys in ``BLOCK_N`` blocks, flash-attention
style: the logits ``x_I x_Jᵀ / τ`` live only in registers, the forward keeps a running max
and sum per row, the backward recomputes the block and accumulates
``grad_I = Σ_J Q_IJ x_J`` with ``Q_ij = (w_i P_ij + w_j P_ji) / τ`` (``w_i P_ij / τ`` with
stop-gradient). Memory is ``O(N d)``; cost ``N² d`` forward and ``2 N² d`` backward (no
symmetric halving: each program owns its rows, so no atomics).

The products' precision (:func:`~cl2gnn.nn._triton_plan.operand_precision`: torch's own
switch for float32 rows, or ``matmul_dtype="bfloat16"``) and the error bound each meets, the
key splits that fill the device at sizes just past the dense threshold, and the
configurations the autotuner tries (pinned at large ``N``) are chosen on the host by
:mod:`~cl2gnn.nn._triton_plan`.

What keeps the tensor cores fed (the exponentials run on a far slower unit than the GEMMs):

* base 2: the logits come out of the product scaled by ``log2(e) / τ``, so each
  exponential is one ``exp2`` (the hardware's instruction) with no multiply before it;
* bounded logits (``max ‖x‖² / τ <=`` :data:`~cl2gnn.nn.tiled.MAX_LOGIT`, e.g. unit rows
  and τ >= 0.025, as in the torch tiles): the forward sums ``exp(S)`` unshifted (no running
  max), and the symmetric backward takes one exponential per pair instead of two,
  ``w_i P_ij + w_j P_ji = E_ij (a_i + a_j)`` with ``a = w e^{-lse}``. The bound is decided
  on the device (a flag the kernels read), so the step has no host read-back;
* block sizes, warps and pipeline stages autotuned (:mod:`~cl2gnn.nn._triton_plan`); one
  configuration under the interpreter, where timing means nothing.

Complete graph only (self pairs optional, no ``exclude_index``), ``d <= 256``, float16,
bfloat16 or float32. Runs on CPU tensors under ``TRITON_INTERPRET=1`` (how it is tested).
The GPU's GEMM rate these kernels reach is measured by ``benchmarks/infonce_scale.py scale``.
"""

from __future__ import annotations

import contextlib
import math
import os

import torch
from torch import Tensor

from .._checks import one_of, optional
from . import _triton_plan as plan
from .tiled import MATMUL_DTYPES, MAX_LOGIT

try:
    import triton
    import triton.language as tl
except ImportError:  # optional: the torch implementation is always there
    triton = None

MAX_DIM = 256  # the backward keeps a BLOCK_M × d accumulator per program
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"  # read by Triton at import too


def supports(device: torch.device, dtype: torch.dtype, dim: int) -> bool:
    """Whether the kernels take rows of width ``dim`` and ``dtype`` on ``device``: Triton
    installed and a CUDA device (a question any machine can ask)."""
    return triton is not None and device.type == "cuda" and dtype in DTYPES and dim <= MAX_DIM


def triton_available(x: Tensor) -> bool:
    """Whether the kernels can run on ``x``: Triton installed and a CUDA tensor (or the
    interpreter enabled)."""
    return triton is not None and (x.is_cuda or INTERPRETED)


def check_triton_input(x: Tensor) -> None:
    if x.dtype not in DTYPES:
        raise ValueError(f"the Triton implementation supports {DTYPES}, got {x.dtype}")
    if x.size(1) > MAX_DIM:
        raise ValueError(f"the Triton implementation supports d <= {MAX_DIM}, got {x.size(1)}")
    if not triton_available(x):
        raise RuntimeError(
            "the Triton implementation needs triton and a CUDA tensor (or TRITON_INTERPRET=1)"
        )


def _configs(candidates: tuple) -> list:
    chosen = (plan.INTERPRETER_CONFIG,) if INTERPRETED else candidates
    return [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=warps, num_stages=stages)
        for m, n, warps, stages in chosen
    ]


if triton is not None:
    LOG2E = tl.constexpr(math.log2(math.e))
    LN2 = tl.constexpr(math.log(2.0))

    @triton.jit
    def _rows_of(x_ptr, rows, dims, n, d):
        """Rows ``rows`` of the ``[n, d]`` row-major matrix, zero-padded to the block."""
        mask = (rows[:, None] < n) & (dims[None, :] < d)
        return tl.load(x_ptr + rows[:, None] * d + dims[None, :], mask=mask, other=0.0)

    @triton.jit
    def _key_range(n, SPLITS, BLOCK_N: tl.constexpr):
        """This program's keys ``[start, end)``: its split's share, whole key blocks."""
        share = tl.cdiv(tl.cdiv(n, SPLITS), BLOCK_N) * BLOCK_N
        start = tl.program_id(1) * share
        return start, tl.minimum(start + share, n)

    @triton.jit
    def _logits2(
        q, x_ptr, cols, dims, n, d, rows, scale2, SELF_LOOPS: tl.constexpr, PRECISION: tl.constexpr
    ):
        """Keys of block ``cols`` and the ``[BLOCK_M, BLOCK_N]`` logits in base 2,
        ``S_ij log2(e)``, invalid pairs -inf."""
        k = _rows_of(x_ptr, cols, dims, n, d)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale2
        valid = cols[None, :] < n
        if not SELF_LOOPS:
            valid = valid & (rows[:, None] != cols[None, :])
        return k, tl.where(valid, s, float("-inf"))

    @triton.autotune(
        configs=_configs(plan.FORWARD_CONFIGS),
        key=["n_bucket", "d", "SPLITS"],
        prune_configs_by={"early_config_prune": plan.pinned},
    )
    @triton.jit
    def _forward_kernel(
        x_ptr,
        bounded_ptr,
        lse_ptr,
        n,
        d,
        n_bucket,
        scale2,
        SPLITS,
        SELF_LOOPS: tl.constexpr,
        PRECISION: tl.constexpr,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_D: tl.constexpr,
    ):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        dims = tl.arange(0, BLOCK_D)
        first, last = _key_range(n, SPLITS, BLOCK_N)
        q = _rows_of(x_ptr, rows, dims, n, d)
        total = tl.zeros((BLOCK_M,), tl.float32)
        if tl.load(bounded_ptr) != 0:  # every exp(S_ij) a normal float32: no shift
            for start in range(first, last, BLOCK_N):
                cols = start + tl.arange(0, BLOCK_N)
                _, s = _logits2(q, x_ptr, cols, dims, n, d, rows, scale2, SELF_LOOPS, PRECISION)
                total += tl.sum(tl.exp2(s), axis=1)
            lse2 = tl.log2(total)
        else:
            m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
            for start in range(first, last, BLOCK_N):
                cols = start + tl.arange(0, BLOCK_N)
                _, s = _logits2(q, x_ptr, cols, dims, n, d, rows, scale2, SELF_LOOPS, PRECISION)
                new_m = tl.maximum(m, tl.max(s, axis=1))
                shift = tl.where(new_m == float("-inf"), 0.0, new_m)  # rows without keys so far
                total = total * tl.exp2(m - shift) + tl.sum(tl.exp2(s - shift[:, None]), axis=1)
                m = new_m
            lse2 = tl.log2(total) + m
        # this split's log-partition (-inf without keys); the splits' are combined after
        tl.store(lse_ptr + tl.program_id(1) * n + rows, lse2 * LN2, mask=rows < n)

    @triton.jit
    def _backward_sweep(
        acc,
        q,
        x_ptr,
        lse_ptr,
        u_ptr,
        a_ptr,
        rows,
        dims,
        n,
        d,
        scale2,
        first,
        last,
        SELF_LOOPS: tl.constexpr,
        STOP_GRADIENT: tl.constexpr,
        ONE_EXP: tl.constexpr,
        PRECISION: tl.constexpr,
        FP32_PRODUCT: tl.constexpr,
        BLOCK_N: tl.constexpr,
    ):
        """``acc + Σ_J Q_IJ x_J`` over the key blocks ``[first, last)``. Rows without keys
        come with ``lse = +inf`` and ``u = a = 0``."""
        row_mask = rows < n
        l_rows = tl.load(lse_ptr + rows, mask=row_mask, other=float("inf")) * LOG2E
        u_rows = tl.load(u_ptr + rows, mask=row_mask, other=0.0)
        a_rows = tl.load(a_ptr + rows, mask=row_mask, other=0.0)
        for start in range(first, last, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            k, s = _logits2(q, x_ptr, cols, dims, n, d, rows, scale2, SELF_LOOPS, PRECISION)
            if STOP_GRADIENT:  # w_i P_ij / τ
                weights = tl.exp2(s - l_rows[:, None]) * u_rows[:, None]
            elif ONE_EXP:  # bounded logits: (w_i P_ij + w_j P_ji) / τ = E_ij (a_i + a_j)
                a_cols = tl.load(a_ptr + cols, mask=cols < n, other=0.0)
                weights = tl.exp2(s) * (a_rows[:, None] + a_cols[None, :])
            else:  # S is symmetric, so P_ji = exp(S_ij - lse_j)
                l_cols = tl.load(lse_ptr + cols, mask=cols < n, other=float("inf")) * LOG2E
                u_cols = tl.load(u_ptr + cols, mask=cols < n, other=0.0)
                weights = tl.exp2(s - l_rows[:, None]) * u_rows[:, None]
                weights += tl.exp2(s - l_cols[None, :]) * u_cols[None, :]
            if FP32_PRODUCT:  # float16 would flush the small attention weights to zero
                acc += tl.dot(weights, k.to(tl.float32), input_precision=PRECISION)
            elif k.dtype == tl.bfloat16:  # the weights rounded to nearest, as the rows were
                weights = weights.to(tl.bfloat16, fp_downcast_rounding="rtne")
                acc += tl.dot(weights, k, input_precision=PRECISION)
            else:
                acc += tl.dot(weights.to(k.dtype), k, input_precision=PRECISION)
        return acc

    @triton.autotune(
        configs=_configs(plan.BACKWARD_CONFIGS),
        key=["n_bucket", "d", "SPLITS", "STOP_GRADIENT"],
        prune_configs_by={"early_config_prune": plan.fitting_and_pinned},
    )
    @triton.jit
    def _backward_kernel(
        x_ptr,
        bounded_ptr,
        lse_ptr,
        u_ptr,
        a_ptr,
        grad_ptr,
        n,
        d,
        n_bucket,
        scale2,
        SPLITS,
        SELF_LOOPS: tl.constexpr,
        STOP_GRADIENT: tl.constexpr,
        PRECISION: tl.constexpr,
        FP32_PRODUCT: tl.constexpr,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_D: tl.constexpr,
    ):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        dims = tl.arange(0, BLOCK_D)
        first, last = _key_range(n, SPLITS, BLOCK_N)
        q = _rows_of(x_ptr, rows, dims, n, d)
        acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
        # uniform, taken once per program, outside the loop it selects (with stop-gradient
        # both sweeps are the same one exponential per pair)
        if tl.load(bounded_ptr) != 0:
            acc = _backward_sweep(
                acc, q, x_ptr, lse_ptr, u_ptr, a_ptr, rows, dims, n, d, scale2, first, last,
                SELF_LOOPS, STOP_GRADIENT, True, PRECISION, FP32_PRODUCT, BLOCK_N,
            )  # fmt: skip
        else:
            acc = _backward_sweep(
                acc, q, x_ptr, lse_ptr, u_ptr, a_ptr, rows, dims, n, d, scale2, first, last,
                SELF_LOOPS, STOP_GRADIENT, False, PRECISION, FP32_PRODUCT, BLOCK_N,
            )  # fmt: skip
        out = grad_ptr + tl.program_id(1) * n * d  # this split's share of the gradient
        tl.store(
            out + rows[:, None] * d + dims[None, :],
            acc,
            mask=(rows[:, None] < n) & (dims[None, :] < d),
        )


def _on_device_of(x: Tensor) -> contextlib.AbstractContextManager:
    """Triton launches on the current CUDA device: make it ``x``'s."""
    return torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext()


def _launch(rows: Tensor, tau: float, precision: str) -> tuple:
    """The grid, the key splits and the arguments both kernels share after their
    pointers, for the operand ``rows`` (``precision`` from ``plan.operand_precision``)."""
    n, d = rows.shape
    splits = plan.key_splits(n, plan.multiprocessors(rows.device))
    settings = {
        # the input precision of float32 operands (half ones take the tensor cores anyway)
        "PRECISION": "tf32" if precision == "tf32" else "ieee",
        "BLOCK_D": max(16, triton.next_power_of_2(d)),
    }
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), splits)  # noqa: E731
    sizes = (n, d, triton.next_power_of_2(n), math.log2(math.e) / tau, splits)
    return grid, splits, sizes, settings


def _bounded_flag(x: Tensor, tau: float) -> Tensor:
    """On the device: whether every logit satisfies ``|S_ij| <= MAX_LOGIT``
    (Cauchy-Schwarz), so that ``exp`` needs no shift."""
    top = x.detach().float().square().sum(1).amax()
    return (top / tau <= MAX_LOGIT).to(torch.int32)


class _TritonRowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, tau, stop_gradient, self_loops, matmul_dtype):
        precision = plan.operand_precision(x, matmul_dtype)
        rows = (x.to(torch.bfloat16) if precision == "bf16" else x).contiguous()
        bounded = _bounded_flag(rows, tau)
        grid, splits, sizes, settings = _launch(rows, tau, precision)
        shares = torch.empty(splits, x.size(0), dtype=torch.float32, device=x.device)
        with _on_device_of(x):
            _forward_kernel[grid](rows, bounded, shares, *sizes, SELF_LOOPS=self_loops, **settings)
        lse = shares[0] if splits == 1 else torch.logsumexp(shares, 0)
        ctx.save_for_backward(rows, lse, bounded)
        ctx.settings = (tau, stop_gradient, self_loops, precision, x.dtype)
        return lse.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_lse):
        rows, lse, bounded = ctx.saved_tensors
        tau, stop_gradient, self_loops, precision, dtype = ctx.settings
        has_keys = torch.isfinite(lse)
        u = torch.where(has_keys, grad_lse.float() / tau, torch.zeros_like(lse)).contiguous()
        lse = torch.where(has_keys, lse, torch.full_like(lse, float("inf")))
        a = u * torch.exp(-lse)  # read only when the logits are bounded, where it is finite
        grid, splits, sizes, settings = _launch(rows, tau, precision)
        shares = torch.empty((splits, *rows.shape), dtype=torch.float32, device=rows.device)
        with _on_device_of(rows):
            _backward_kernel[grid](
                rows,
                bounded,
                lse,
                u,
                a,
                shares,
                *sizes,
                SELF_LOOPS=self_loops,
                STOP_GRADIENT=stop_gradient,
                FP32_PRODUCT=rows.dtype == torch.float16,
                **settings,
            )
        grad = shares[0] if splits == 1 else shares.sum(0)
        return grad.to(dtype), None, None, None, None


def triton_row_logsumexp(
    x: Tensor,
    temperature: float,
    stop_gradient: bool = False,
    self_loops: bool = False,
    matmul_dtype: str | None = None,
) -> Tensor:
    r"""Per row ``log Σ_{j (≠ i)} exp(x_i·x_j/τ)`` (``[N]``, ``τ = temperature``, ``-inf``
    for a row without keys), exact, in ``O(N d)`` memory, with the fused Triton kernels;
    the same function as :func:`~cl2gnn.nn.tiled.tiled_row_logsumexp` without
    ``exclude_index``. ``matmul_dtype="bfloat16"``: float32 rows multiplied in bfloat16 with
    float32 accumulation and results (the module's docstring)."""
    check_triton_input(x)
    optional(one_of(*MATMUL_DTYPES))(matmul_dtype, "matmul_dtype")
    return _TritonRowLogSumExp.apply(
        x, float(temperature), bool(stop_gradient), bool(self_loops), matmul_dtype
    )
