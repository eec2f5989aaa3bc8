"""The kNN search's options, importable without torch (so that a benchmark's argument error
answers before torch loads)."""

from __future__ import annotations

METRICS = ("cosine", "ip", "l2")
BACKENDS = ("auto", "faiss", "torch")
# the torch tiles' reduced formats and their unit roundoff (bfloat16: 8 significant bits;
# TF32: 11, once the operand is rounded to them, see cl2gnn.graphs.knn_tiles)
UNIT_ROUNDOFF = {"tf32": 2.0**-11, "bf16": 2.0**-8}
TILE_PRECISIONS = ("full", *UNIT_ROUNDOFF)
PRECISIONS = ("auto", *TILE_PRECISIONS)
