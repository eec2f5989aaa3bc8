"""FAISS, where it loads and runs: every use in the library asks here first and falls back to
torch when the answer is no.

A FAISS wheel can be installed and still fail: a ``faiss-gpu-cu12`` wheel on a machine with
CUDA 13 raises ``OSError`` (or ``ImportError``) loading CUDA 12's cuBLAS at import, or a
``RuntimeError`` at its first GPU call. Both answers are cached: a failing import would
otherwise be retried at every call.
"""

from __future__ import annotations

import functools
from types import ModuleType

import numpy as np

# what a broken install raises at import: no package, a missing or mismatched shared library
# (OSError from the dynamic loader), a CUDA error while the extension initialises
LOAD_ERRORS = (ImportError, OSError, RuntimeError)

# faiss's GPU k-selection returns at most this many neighbors per query
FAISS_GPU_MAX_K = 2048


@functools.cache
def _load() -> tuple[ModuleType | None, str | None]:
    try:
        import faiss
    except LOAD_ERRORS as error:
        return None, f"{type(error).__name__}: {error}"
    return faiss, None


def load_faiss() -> ModuleType | None:
    """The ``faiss`` module, or ``None`` when it does not import."""
    return _load()[0]


def faiss_problem() -> str | None:
    """Why ``faiss`` does not import (the exception, one line), or ``None`` when it does."""
    return _load()[1]


def faiss_available() -> bool:
    """``faiss`` imports (CPU indexes at least)."""
    return load_faiss() is not None


@functools.cache
def faiss_has_gpu() -> bool:
    """``faiss`` has GPU support and it runs: a GPU index is built and searched once, which
    is where a cuBLAS that does not match the wheel's fails."""
    faiss = load_faiss()
    if faiss is None or not hasattr(faiss, "StandardGpuResources"):
        return False
    try:
        if faiss.get_num_gpus() < 1:
            return False
        resources = faiss.StandardGpuResources()
        points = np.eye(2, dtype=np.float32)
        index = faiss.GpuIndexFlatL2(resources, 2)
        index.add(points)
        index.search(points, 1)
    except LOAD_ERRORS:
        return False
    return True
