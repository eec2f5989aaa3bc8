"""Where cl2gnn keeps files it derives (staged raw datasets, decoded image caches)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$CL2GNN_CACHE``, default ``~/.cache/cl2gnn``."""
    return Path(os.environ.get("CL2GNN_CACHE", Path.home() / ".cache" / "cl2gnn"))
