"""Self-check of the central contract on the current machine: for every example call of
every registered operator (:data:`cl2gnn.nn.OPERATORS`),
``forward(x) == x - step * grad(energy)(x)`` in float64, plus Proposition 1 (InfoNCE =
alignment + uniformity energies) and eq. 12 (self-attention)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from cl2gnn._registry import Example
from cl2gnn.losses import info_nce
from cl2gnn.nn import OPERATORS, UniformAttention


def identity_error(example: Example, device: str | torch.device = "cpu") -> float:
    """``max |forward(x) - (x - step * grad(energy)(x))|`` of an operator's example call, in
    float64 on ``device``."""
    op = example.build().to(device, torch.float64)
    x, *args = (_to(value, device) for value in example.args)
    kwargs = {key: _to(value, device) for key, value in example.kwargs.items()}
    x = x.detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(op.energy(x, *args, **kwargs), x)
    return float((op(x, *args, **kwargs) - (x - op.step * grad)).detach().abs().max())


def _to(value, device):
    return value.to(device) if isinstance(value, torch.Tensor) else value


def run_checks(device: str = "cpu", num_nodes: int = 64, dim: int = 16, seed: int = 0) -> list:
    """``[(name, max_abs_error)]`` for every check; all should be ~1e-13 or smaller.

    ``num_nodes >= 4``: the graphs pair the nodes as two views and sample a quarter of them
    as keys (an odd last node is left out of the pairs)."""
    if num_nodes < 4:
        raise ValueError(f"num_nodes must be >= 4, got {num_nodes}")
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    gen = torch.Generator().manual_seed(seed)
    checks: list[tuple[str, Callable[[], float]]] = [
        (f"{name}({label})", partial(identity_error, example, device))
        for name, cls in OPERATORS.items()
        for label, example in cls.examples(num_nodes, dim, gen).items()
    ]
    x = torch.randn(num_nodes, dim, generator=gen, dtype=torch.float64).to(device)
    checks += [
        ("eq. 12 self-attention", lambda: _self_attention_error(x)),
        ("Prop. 1 InfoNCE decomposition", lambda: _decomposition_error(x[: 2 * (num_nodes // 2)])),
    ]
    return [(name, check()) for name, check in checks]


def _self_attention_error(x: torch.Tensor) -> float:
    tau = 0.5
    op = UniformAttention(step=-tau, temperature=tau, stop_gradient=True, self_loops=True)
    attn = torch.softmax(x @ x.T / tau, dim=1)
    return float((op(x) - attn @ x).abs().max())


def _decomposition_error(x: torch.Tensor) -> float:
    z = torch.nn.functional.normalize(x, dim=-1)
    b = z.size(0) // 2
    logits = z @ z.T / 0.5
    logits.fill_diagonal_(float("-inf"))
    positive = torch.cat([torch.arange(b, 2 * b), torch.arange(b)]).to(z.device)
    direct = torch.nn.functional.cross_entropy(logits, positive)
    return float((info_nce(z[:b], z[b:], temperature=0.5) - direct).abs())
