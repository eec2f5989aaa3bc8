"""Shared stateless operator instances for the functional losses.

The operators hold no parameters or buffers, so one instance per configuration serves
every call and device; building a ``MessagePassing`` module costs about a millisecond
(signature inspection), more than a small loss itself.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from ..graphs import pair_graph
from ..nn import AttentionAlignConv, ContrastiveConv, UniformAttention


@lru_cache(maxsize=64)
def contrastive_conv(
    tau: float,
    positive_in_denominator: bool,
    implementation: str = "auto",
    distributed: str | None = None,
) -> ContrastiveConv:
    return ContrastiveConv(
        tau=tau,
        positive_in_denominator=positive_in_denominator,
        implementation=implementation,
        distributed=distributed,
    )


@lru_cache(maxsize=64)
def uniform_attention(tau: float, distributed: str | None = None) -> UniformAttention:
    return UniformAttention(tau=tau, distributed=distributed)


@lru_cache(maxsize=64)
def attention_align(
    beta: float, normalize: str, distributed: str | None = None
) -> AttentionAlignConv:
    return AttentionAlignConv(beta=beta, normalize=normalize, distributed=distributed)


@lru_cache(maxsize=64)
def cached_pair_graph(batch_size: int, device: torch.device) -> torch.Tensor:
    """The two-view pair graph; read-only, shared between calls."""
    return pair_graph(batch_size, 2, device=device)
