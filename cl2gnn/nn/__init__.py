"""Contrastive objectives as PyG message-passing operators.

Every operator has ``forward`` (one update step of size ``step``) and ``energy`` (a scalar
loss), tied exactly by ``forward(x) == x - step * grad(energy)(x)``.
"""

from .align import AlignConv
from .attention import AttentionAlignConv
from .contrastive import ContrastiveConv
from .contrastive_norm import ContrastiveNorm
from .memory import MultiStageMemory
from .uniform import UniformAttention

OPERATORS = {
    "AlignConv": AlignConv,
    "UniformAttention": UniformAttention,
    "AttentionAlignConv": AttentionAlignConv,
    "MultiStageMemory": MultiStageMemory,
    "ContrastiveConv": ContrastiveConv,
    "ContrastiveNorm": ContrastiveNorm,
}

__all__ = [
    "OPERATORS",
    "AlignConv",
    "AttentionAlignConv",
    "ContrastiveConv",
    "ContrastiveNorm",
    "MultiStageMemory",
    "UniformAttention",
]
