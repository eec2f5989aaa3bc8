"""One shared instance per configuration of the operators the functional losses compose.

They hold no parameters or buffers, so one instance serves every call and device; building
a ``MessagePassing`` module costs about a millisecond (signature inspection), more than a
small loss itself. They are built outside any ``torch.compile`` trace (dynamo cannot trace
PyG's constructor): :func:`_build` runs as it is even while dynamo traces a loss, which
then reads the built operator from the table.
"""

from __future__ import annotations

from typing import TypeVar

import torch

from ..nn import UniformAttention
from . import _tiling

Operator = TypeVar("Operator")
MAX_SHARED = 64  # configurations kept; the oldest one is dropped beyond
_SHARED: dict[tuple, object] = {}


@torch.compiler.assume_constant_result
def _build(cls: type, options: tuple) -> bool:
    """Build ``cls(**options)`` into the table unless it is there (eagerly, also while
    dynamo traces the caller: it sees a constant)."""
    if (cls, options) not in _SHARED:
        if len(_SHARED) >= MAX_SHARED:
            del _SHARED[next(iter(_SHARED))]
        _SHARED[cls, options] = cls(**dict(options))
    return True


def shared_operator(cls: type[Operator], **options) -> Operator:
    """``cls(**options)``, built once per class and (hashable) options; never modify it."""
    key = tuple(options.items())
    _build(cls, key)
    return _SHARED[cls, key]


def uniform_attention(temperature: float, distributed: str | None = None) -> UniformAttention:
    """The shared :class:`~cl2gnn.nn.UniformAttention` whose ``row_logsumexp`` is a loss's
    per-anchor log-partition, in tiles (and ring tiles) of ``_tiling.TILE`` rows."""
    return shared_operator(
        UniformAttention,
        temperature=float(temperature),
        tile_size=_tiling.TILE,
        distributed=distributed,
    )
