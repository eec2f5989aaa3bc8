"""Files cl2gnn writes: where it keeps what it derives (staged raw datasets, decoded image
caches), outputs that appear only complete, and run folders that one live run owns.

The library's own temporary entries are named ``.cl2gnn-<8 hex digits>.partial.<name>``
(:func:`partial_name`), its lock file :data:`LOCK_NAME`: these names alone are ever removed
as stale, so that a user's ``.lock`` or ``.thesis.partial.tex`` in an output folder stays."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import shutil
import stat
import time
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
    ``seed_<k>``; no live run writes there while we hold the lock). On leaving, the lock
    file goes, and the folder too if this call created it and nothing was written into it.

    Refused with a ``ValueError`` naming the path: a folder another live run holds (naming
    its process id), a folder inside a live run's folder or holding one in the sub-folders
    it writes (the outer run would replace the inner one's files), and a lock that is not a
    plain file of its own (a symbolic or hard link: the lock is opened without following a
    link, and written only once it is known to be the library's)."""
    path = Path(path)
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    lock = path / LOCK_NAME
    fd = _take_lock(lock, path)
    try:
        _check_not_nested(path, subfolders)
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


# a lock another process probes (:func:`held_by_a_live_run`) is busy for microseconds: a
# run that finds its lock busy asks again this often before it counts it as a live run's
LOCK_RETRIES, LOCK_RETRY_SECONDS = 5, 0.02


def _take_lock(lock: Path, folder: Path) -> int:
    """The open, exclusively ``flock``-ed lock file ``lock`` of ``folder``: created without
    following a link, refused unless a plain file with no other name."""
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as error:
            if error.errno != errno.ELOOP:
                raise
            raise ValueError(
                f"{lock}: a symbolic link where the library keeps its lock; remove it (the "
                "run would write through it)"
            ) from None
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_nlink != 1:
            os.close(fd)
            raise ValueError(
                f"{lock}: not the library's lock file (a hard link, or not a plain file); remove it"
            )
        for attempt in range(LOCK_RETRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == LOCK_RETRIES - 1:
                    owner = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    raise ValueError(
                        f"{folder}: another run (process {owner}) is writing into this "
                        "folder; wait for it to end or choose another folder"
                    ) from None
                time.sleep(LOCK_RETRY_SECONDS)
        # the holder before us may have unlinked the file between our open and our lock
        if os.path.lexists(lock) and os.lstat(lock).st_ino == os.fstat(fd).st_ino:
            return fd
        os.close(fd)


def held_by_a_live_run(folder: Path) -> bool:
    """Whether a live process holds :func:`locked_folder`'s lock of ``folder``: its lock
    file cannot be locked shared (a probe of microseconds, never a link followed)."""
    try:
        fd = os.open(folder / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False  # none, or not a file the library made
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases the probe's shared lock
    return False


def _check_not_nested(path: Path, subfolders: Callable[[str], bool] | None) -> None:
    """``ValueError`` where ``path`` lies inside a live run's folder, or holds one in the
    sub-folders ``subfolders`` names (what this run replaces)."""
    for parent in path.resolve().parents:
        if held_by_a_live_run(parent):
            raise ValueError(
                f"{path}: inside the folder {parent} of a live run, which replaces what it "
                "holds when it finishes; choose a folder outside it"
            )
    for sub in path.iterdir() if subfolders else ():
        if not (subfolders(sub.name) and sub.is_dir()) or sub.is_symlink():
            continue
        for inner, _, _ in os.walk(sub):  # os.walk follows no link
            if held_by_a_live_run(Path(inner)):
                raise ValueError(
                    f"{path}: a live run writes into {inner}, which this run would replace; "
                    "wait for it to end or choose another folder"
                )


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary name beside ``path`` (:func:`partial_name`: same folder, same suffix)
    that replaces ``path`` only when the block ends without an error; otherwise it is
    removed. A reader never sees half a file. A write that fails in the block (a full disk)
    raises its ``OSError`` naming ``path``, not the temporary name."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(partial_name(path.name))
    try:
        yield temporary
        os.replace(temporary, path)
    except OSError as error:
        if error.filename not in (None, str(temporary)):
            raise
        raise OSError(error.errno, error.strerror or str(error), str(path)) from None
    finally:
        temporary.unlink(missing_ok=True)


def save_torch(value: object, path: str | os.PathLike) -> None:
    """``torch.save(value, path)``, a write that fails (a full disk) raised as the
    ``OSError`` naming ``path`` that a plain file write raises: torch's writer raises a
    ``RuntimeError`` of its internals instead."""
    import torch

    try:
        torch.save(value, path)
    except RuntimeError as error:
        reason = " ".join(str(error).split())[:200]
        raise OSError(errno.EIO, f"cannot be written ({reason})", str(path)) from None


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
