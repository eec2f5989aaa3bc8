"""The exact log-partition of :mod:`cl2gnn.nn.tiled` as two fused Triton kernels (CUDA).

One program per ``BLOCK_M`` rows streams over all keys in ``BLOCK_N`` blocks, flash-attention
style: the logits ``x_I x_Jᵀ / τ`` live only in registers, the forward keeps a running max
and sum per row, the backward recomputes the block and accumulates
``grad_I = Σ_J Q_IJ x_J`` with ``Q_ij = (w_i P_ij + w_j P_ji) / τ`` (``w_i P_ij / τ`` with
stop-gradient). Memory is ``O(N d)``; cost ``N² d`` forward and ``2 N² d`` backward (no
symmetric halving: each program owns its rows, so no atomics). Float32 inputs use TF32 in
the products only when ``torch.backends.cuda.matmul.allow_tf32`` is set, as ``torch.mm`` does.

Complete graph only (self pairs optional, no ``exclude_index``), ``d <= 256``, float16,
bfloat16 or float32. Runs on CPU tensors under ``TRITON_INTERPRET=1`` (how it is tested).
"""

from __future__ import annotations

import contextlib
import os

import torch
from torch import Tensor

try:
    import triton
    import triton.language as tl
except ImportError:  # optional: the torch implementation is always there
    triton = None

MAX_DIM = 256  # the backward keeps a BLOCK_M × d accumulator per program
BLOCK_M = BLOCK_N = 64
DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def triton_available(x: Tensor) -> bool:
    """Whether the kernels can run on ``x``: Triton installed and a CUDA tensor (or the
    interpreter enabled)."""
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    return triton is not None and (x.is_cuda or interpreted)


def check_triton_input(x: Tensor) -> None:
    if x.dtype not in DTYPES:
        raise ValueError(f"the Triton implementation supports {DTYPES}, got {x.dtype}")
    if x.size(1) > MAX_DIM:
        raise ValueError(f"the Triton implementation supports d <= {MAX_DIM}, got {x.size(1)}")
    if not triton_available(x):
        raise RuntimeError(
            "the Triton implementation needs triton and a CUDA tensor (or TRITON_INTERPRET=1)"
        )


if triton is not None:

    @triton.jit
    def _rows_of(x_ptr, rows, dims, n, d):
        """Rows ``rows`` of the ``[n, d]`` row-major matrix, zero-padded to the block."""
        mask = (rows[:, None] < n) & (dims[None, :] < d)
        return tl.load(x_ptr + rows[:, None] * d + dims[None, :], mask=mask, other=0.0)

    @triton.jit
    def _logits(
        q, x_ptr, cols, dims, n, d, rows, scale, SELF_LOOPS: tl.constexpr, PRECISION: tl.constexpr
    ):
        """Keys of block ``cols`` and the ``[BLOCK_M, BLOCK_N]`` logits, invalid pairs -inf."""
        k = _rows_of(x_ptr, cols, dims, n, d)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        valid = cols[None, :] < n
        if not SELF_LOOPS:
            valid = valid & (rows[:, None] != cols[None, :])
        return k, tl.where(valid, s, float("-inf"))

    @triton.jit
    def _forward_kernel(
        x_ptr,
        lse_ptr,
        n,
        d,
        scale,
        SELF_LOOPS: tl.constexpr,
        PRECISION: tl.constexpr,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_D: tl.constexpr,
    ):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        dims = tl.arange(0, BLOCK_D)
        row_mask = rows < n
        q = _rows_of(x_ptr, rows, dims, n, d)
        m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
        total = tl.zeros((BLOCK_M,), tl.float32)
        for start in range(0, n, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            _, s = _logits(q, x_ptr, cols, dims, n, d, rows, scale, SELF_LOOPS, PRECISION)
            new_m = tl.maximum(m, tl.max(s, axis=1))
            shift = tl.where(new_m == float("-inf"), 0.0, new_m)  # rows without keys so far
            total = total * tl.exp(m - shift) + tl.sum(tl.exp(s - shift[:, None]), axis=1)
            m = new_m
        tl.store(lse_ptr + rows, tl.log(total) + m, mask=row_mask)

    @triton.jit
    def _backward_kernel(
        x_ptr,
        lse_ptr,
        u_ptr,
        grad_ptr,
        n,
        d,
        scale,
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
        row_mask = rows < n
        q = _rows_of(x_ptr, rows, dims, n, d)
        # rows without keys come with lse = +inf and u = 0
        lse_rows = tl.load(lse_ptr + rows, mask=row_mask, other=float("inf"))
        u_rows = tl.load(u_ptr + rows, mask=row_mask, other=0.0)
        acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
        for start in range(0, n, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            k, s = _logits(q, x_ptr, cols, dims, n, d, rows, scale, SELF_LOOPS, PRECISION)
            weights = tl.exp(s - lse_rows[:, None]) * u_rows[:, None]  # w_i P_ij / τ
            if not STOP_GRADIENT:  # S is symmetric, so P_ji = exp(S_ij - lse_j)
                lse_cols = tl.load(lse_ptr + cols, mask=cols < n, other=float("inf"))
                u_cols = tl.load(u_ptr + cols, mask=cols < n, other=0.0)
                weights += tl.exp(s - lse_cols[None, :]) * u_cols[None, :]
            if FP32_PRODUCT:  # float16 would flush the small attention weights to zero
                acc += tl.dot(weights, k.to(tl.float32), input_precision=PRECISION)
            else:
                acc += tl.dot(weights.to(k.dtype), k, input_precision=PRECISION)
        tl.store(
            grad_ptr + rows[:, None] * d + dims[None, :],
            acc,
            mask=row_mask[:, None] & (dims[None, :] < d),
        )


def _on_device_of(x: Tensor) -> contextlib.AbstractContextManager:
    """Triton launches on the current CUDA device: make it ``x``'s."""
    return torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext()


def _launch_settings(x: Tensor) -> dict:
    # input precision matters for float32 operands only (float16 ones take tensor cores)
    ieee = x.dtype == torch.float32 and not (x.is_cuda and torch.backends.cuda.matmul.allow_tf32)
    block_d = max(16, triton.next_power_of_2(x.size(1)))
    return {
        "PRECISION": "ieee" if ieee else "tf32",
        "BLOCK_M": BLOCK_M,
        "BLOCK_N": BLOCK_N,
        "BLOCK_D": block_d,
    }


class _TritonRowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, tau, stop_gradient, self_loops):
        x = x.contiguous()
        n, d = x.shape
        lse = torch.empty(n, dtype=torch.float32, device=x.device)
        grid = (triton.cdiv(n, BLOCK_M),)
        with _on_device_of(x):
            _forward_kernel[grid](x, lse, n, d, 1.0 / tau, self_loops, **_launch_settings(x))
        ctx.save_for_backward(x, lse)
        ctx.settings = (tau, stop_gradient, self_loops)
        return lse.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_lse):
        x, lse = ctx.saved_tensors
        tau, stop_gradient, self_loops = ctx.settings
        n, d = x.shape
        has_keys = torch.isfinite(lse)
        u = torch.where(has_keys, grad_lse.float() / tau, torch.zeros_like(lse)).contiguous()
        lse = torch.where(has_keys, lse, torch.full_like(lse, float("inf")))
        grad = torch.empty(n, d, dtype=torch.float32, device=x.device)
        grid = (triton.cdiv(n, BLOCK_M),)
        with _on_device_of(x):
            _backward_kernel[grid](
                x,
                lse,
                u,
                grad,
                n,
                d,
                1.0 / tau,
                self_loops,
                stop_gradient,
                FP32_PRODUCT=x.dtype == torch.float16,
                **_launch_settings(x),
            )
        return grad.to(x.dtype), None, None, None


def triton_row_logsumexp(
    x: Tensor, temperature: float, stop_gradient: bool = False, self_loops: bool = False
) -> Tensor:
    r"""Per row ``log Σ_{j (≠ i)} exp(x_i·x_j/τ)`` (``[N]``, ``τ = temperature``, ``-inf``
    for a row without keys), exact, in ``O(N d)`` memory, with the fused Triton kernels;
    the same function as :func:`~cl2gnn.nn.tiled.tiled_row_logsumexp` without
    ``exclude_index``."""
    check_triton_input(x)
    return _TritonRowLogSumExp.apply(x, float(temperature), bool(stop_gradient), bool(self_loops))
