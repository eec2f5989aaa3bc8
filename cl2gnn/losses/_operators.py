"""One shared instance per configuration of the operators the functional losses compose.

They hold no parameters or buffers, so one instance serves every call and device; building
a ``MessagePassing`` module costs about a millisecond (signature inspection), more than a
small loss itself.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TypeVar

from ..nn import UniformAttention
from . import _tiling

Operator = TypeVar("Operator")


@lru_cache(maxsize=64)
def shared_operator(cls: type[Operator], **options) -> Operator:
    """``cls(**options)``, built once per class and (hashable) options; never modify it."""
    return cls(**options)


def uniform_attention(temperature: float, distributed: str | None = None) -> UniformAttention:
    """The shared :class:`~cl2gnn.nn.UniformAttention` whose ``row_logsumexp`` is a loss's
    per-anchor log-partition, in tiles (and ring tiles) of ``_tiling.TILE`` rows."""
    return shared_operator(
        UniformAttention,
        temperature=float(temperature),
        tile_size=_tiling.TILE,
        distributed=distributed,
    )
