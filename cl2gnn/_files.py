"""Files cl2gnn writes: where it keeps what it derives (staged raw datasets, decoded image
caches), outputs that appear only complete, and run folders that one live run owns."""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


def cache_dir() -> Path:
    """``$CL2GNN_CACHE``, default ``~/.cache/cl2gnn``."""
    return Path(os.environ.get("CL2GNN_CACHE", Path.home() / ".cache" / "cl2gnn"))


LOCK_NAME = ".lock"


@contextmanager
def locked_folder(path: str | os.PathLike) -> Iterator[Path]:
    """Own the run folder ``path`` while the block runs: create it if needed, take an
    exclusive ``flock`` on ``path/.lock`` (released by the kernel when the process ends,
    however it ends, so a killed run leaves no stale lock) and remove the hidden
    ``.partial`` files a killed writer left (no live run writes there while we hold the
    lock). A folder another live run holds raises ``ValueError`` naming it and that run's
    process id. On leaving, the lock file goes, and the folder too if this call created it
    and nothing was written into it."""
    path = Path(path)
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    lock = path / LOCK_NAME
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ValueError(
                f"{path}: another run (process {owner}) is writing into this folder; "
                "wait for it to end or choose another folder"
            ) from None
        # the holder before us may have unlinked the file between our open and our lock
        if os.path.exists(lock) and os.stat(lock).st_ino == os.fstat(fd).st_ino:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        for stale in path.glob(".*.partial*"):
            stale.unlink(missing_ok=True)
        yield path
    finally:
        lock.unlink(missing_ok=True)
        os.close(fd)
        if created and not any(path.iterdir()):
            with suppress(OSError):  # another run may have just taken it
                path.rmdir()


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
