"""Self-check of the central contract on the current machine: for every operator,
``forward(x) == x - step * grad(energy)(x)`` in float64 on a random weighted graph, plus
Proposition 1 (InfoNCE = alignment + uniformity energies) and eq. 12 (self-attention)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from cl2gnn.graphs import pair_graph
from cl2gnn.losses import info_nce
from cl2gnn.nn import (
    AlignConv,
    AttentionAlignConv,
    ContrastiveConv,
    ContrastiveNorm,
    MultiStageMemory,
    UniformAttention,
)


def _identity_error(op: torch.nn.Module, x: torch.Tensor, *args, **kwargs) -> float:
    x = x.detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(op.energy(x, *args, **kwargs), x)
    return float((op(x, *args, **kwargs) - (x - op.step * grad)).detach().abs().max())


def run_checks(device: str = "cpu", num_nodes: int = 64, dim: int = 16, seed: int = 0) -> list:
    """``[(name, max_abs_error)]`` for every check; all should be ~1e-13 or smaller.

    ``num_nodes >= 4``: the graphs pair the nodes as two views and sample a quarter of them
    as keys (an odd last node is left out of the pairs)."""
    if num_nodes < 4:
        raise ValueError(f"num_nodes must be >= 4, got {num_nodes}")
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device)

    x = rand(num_nodes, dim)
    edge_index = torch.randint(0, num_nodes, (2, 4 * num_nodes), generator=gen).to(device)
    weight = rand(4 * num_nodes).abs()
    ids = torch.arange(num_nodes, device=device)
    memory = MultiStageMemory(num_samples=num_nodes, dim=dim, stages=3, step=0.3).to(device)
    memory.push(rand(num_nodes, dim), ids)
    memory.next_stage()
    pairs = pair_graph(num_nodes // 2, 2, device=device)
    keys = torch.randperm(num_nodes, generator=gen)[: num_nodes // 4].to(device)
    checks: list[tuple[str, Callable[[], float]]] = [
        ("AlignConv", lambda: _identity_error(AlignConv(0.3), x, edge_index, weight)),
        ("UniformAttention", lambda: _identity_error(UniformAttention(0.3, 0.5), x)),
        (
            "UniformAttention(stop_gradient)",
            lambda: _identity_error(UniformAttention(0.3, 0.5, stop_gradient=True), x),
        ),
        (
            "UniformAttention(sparse)",
            lambda: _identity_error(UniformAttention(0.3, 0.5), x, edge_index),
        ),
        (
            "UniformAttention(sampled keys)",
            lambda: _identity_error(UniformAttention(0.3, 0.5), x, keys=keys),
        ),
        (
            "AttentionAlignConv(negatives)",
            lambda: _identity_error(AttentionAlignConv(0.3, 2.0), x, edge_index, weight),
        ),
        (
            "AttentionAlignConv(positives, stop_gradient)",
            lambda: _identity_error(
                AttentionAlignConv(0.3, 2.0, "positives", stop_gradient=True), x, edge_index
            ),
        ),
        ("MultiStageMemory", lambda: _identity_error(memory, x, ids)),
        ("ContrastiveConv", lambda: _identity_error(ContrastiveConv(0.2, 0.5), x, pairs)),
        ("ContrastiveNorm", lambda: _norm_identity_error(x)),
        ("eq. 12 self-attention", lambda: _self_attention_error(x)),
        (
            "Prop. 1 InfoNCE decomposition",
            lambda: _decomposition_error(x[: 2 * (num_nodes // 2)]),
        ),
    ]
    return [(name, check()) for name, check in checks]


def _norm_identity_error(x: torch.Tensor) -> float:
    """``forward(x) == LayerNorm(x - step * grad(energy)(x))``: the normalisation layer's
    step is UniformAttention's stop-gradient step (logits of ``x`` itself)."""
    op = ContrastiveNorm(x.size(1), 0.3, 0.5, normalize=False).to(x.device, x.dtype)
    x = x.detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(op.energy(x), x)
    return float((op(x) - op.norm(x - op.step * grad)).detach().abs().max())


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
