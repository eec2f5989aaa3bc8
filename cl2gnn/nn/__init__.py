"""Contrastive objectives as PyG message-passing operators.

Every operator has ``forward`` (one update step of size ``step``) and ``energy`` (a scalar
loss), tied exactly by ``forward(x) == x - step * grad(energy)(x)``. Each registers itself
in :data:`OPERATORS` (``@OPERATORS.register``) with its example calls, which ``cl2gnn
verify`` and the tests check.
"""

from .._registry import OPERATORS
from .align import AlignConv
from .attention import AttentionAlignConv
from .cheb_interp import ChebInterpConv
from .contrastive import ContrastiveConv
from .contrastive_norm import ContrastiveNorm
from .memory import MultiStageMemory
from .uniform import UniformAttention

__all__ = [
    "OPERATORS",
    "AlignConv",
    "AttentionAlignConv",
    "ChebInterpConv",
    "ContrastiveConv",
    "ContrastiveNorm",
    "MultiStageMemory",
    "UniformAttention",
]
