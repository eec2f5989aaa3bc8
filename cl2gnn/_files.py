"""Files cl2gnn writes: where it keeps what it derives (staged raw datasets, decoded image
caches), and outputs that appear only complete."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_dir() -> Path:
    """``$CL2GNN_CACHE``, default ``~/.cache/cl2gnn``."""
    return Path(os.environ.get("CL2GNN_CACHE", Path.home() / ".cache" / "cl2gnn"))


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary name beside ``path`` (same folder, same suffix, so that writers that go by
    the suffix, like ``savefig``, still work) that replaces ``path`` only when the block
    ends without an error; otherwise it is removed. A reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.stem}.{secrets.token_hex(4)}.partial{path.suffix}")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as temporary:
        temporary.write_text(text)
