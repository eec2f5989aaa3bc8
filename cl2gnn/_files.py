"""Files cl2gnn writes: where it keeps what it derives (staged raw datasets, decoded image
caches), outputs that appear only complete, and run folders that one live run owns.

The library's own temporary entries are named ``.cl2gnn-<8 hex digits>.partial.<name>``
(:func:`partial_name`), its lock file :data:`LOCK_NAME`: these names alone are ever removed
as stale, so that a user's ``.lock`` or ``.thesis.partial.tex`` in an output folder stays."""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


def cache_dir() -> Path:
    """``$CL2GNN_CACHE``, default ``~/.cache/cl2gnn``."""
    return Path(os.environ.get("CL2GNN_CACHE", Path.home() / ".cache" / "cl2gnn"))


LOCK_NAME = ".cl2gnn.lock"
_PARTIAL = re.compile(r"\.cl2gnn-[0-9a-f]{8}\.partial\..+")


def partial_name(name: str) -> str:
    """A fresh temporary name for ``name`` (a file or a folder) in the same folder,
    ``.cl2gnn-<8 hex digits>.partial.<name>``: hidden, the suffix kept (writers such as
    ``savefig`` go by it), and unmistakably the library's."""
    return f".cl2gnn-{secrets.token_hex(4)}.partial.{name}"


def is_partial(name: str) -> bool:
    """Whether ``name`` is one of :func:`partial_name`'s."""
    return _PARTIAL.fullmatch(name) is not None


def remove_partials(folder: Path) -> None:
    """Remove the library's temporary entries (:func:`is_partial`) directly in ``folder``:
    files a killed writer left, folders a killed run staged; nothing else."""
    for entry in folder.iterdir():
        if not is_partial(entry.name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


@contextmanager
def locked_folder(
    path: str | os.PathLike, subfolders: Callable[[str], bool] | None = None
) -> Iterator[Path]:
    """Own the run folder ``path`` while the block runs: create it if needed, take an
    exclusive ``flock`` on ``path/.cl2gnn.lock`` (released by the kernel when the process
    ends, however it ends, so a killed run leaves no stale lock) and remove the library's
    temporary entries a killed run left (:func:`remove_partials`) in ``path`` and in the
    sub-folders whose names ``subfolders`` accepts (the ones a run writes, such as
    ``seed_<k>``; no live run writes there while we hold the lock). A folder another live run
    holds raises ``ValueError`` naming it and that run's process id. On leaving, the lock
    file goes, and the folder too if this call created it and nothing was written into it."""
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
        remove_partials(path)
        for sub in path.iterdir() if subfolders else ():
            if subfolders(sub.name) and sub.is_dir() and not sub.is_symlink():
                remove_partials(sub)
        yield path
    finally:
        lock.unlink(missing_ok=True)
        os.close(fd)
        if created and not any(path.iterdir()):
            with suppress(OSError):  # another run may have just taken it
                path.rmdir()


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary name beside ``path`` (:func:`partial_name`: same folder, same suffix)
    that replaces ``path`` only when the block ends without an error; otherwise it is
    removed. A reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(partial_name(path.name))
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as temporary:
        temporary.write_text(text)


@contextmanager
def staging_folder(parent: str | os.PathLike, name: str) -> Iterator[Path]:
    """A fresh hidden folder in ``parent`` (:func:`partial_name` of ``name``) to write into;
    removed with what is left in it when the block ends, however it ends (a killed process
    leaves it to the next :func:`locked_folder` of ``parent``)."""
    staging = Path(parent) / partial_name(name)
    staging.mkdir(parents=True)
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def replaced_as_a_whole(
    folder: str | os.PathLike, owned: Callable[[str], bool], index: str
) -> Iterator[Path]:
    """Write a run into a staging folder (yielded) that replaces, when the block ends
    without an error, the entries of ``folder`` that ``owned`` names (an earlier run's),
    leaving every other entry alone. Hold :func:`locked_folder` on ``folder`` around it.

    The run's ``index`` (the file that lists what the run holds, such as ``result.json``)
    is the first entry to go and the last to come: each step is one rename, so a process
    killed at any point leaves the earlier run whole, or the index absent (never an index
    beside entries it does not list); what it staged goes with the next lock. An error in
    the block leaves ``folder`` as it was."""
    folder = Path(folder)
    with staging_folder(folder, "run") as staging:
        yield staging
        earlier = sorted(
            (e for e in folder.iterdir() if owned(e.name)), key=lambda e: e.name != index
        )
        fresh = sorted(staging.iterdir(), key=lambda e: e.name == index)
        with staging_folder(folder, "replaced") as trash:
            for entry in earlier:
                os.replace(entry, trash / entry.name)
            for entry in fresh:
                os.replace(entry, folder / entry.name)
