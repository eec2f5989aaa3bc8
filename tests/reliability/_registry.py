"""The machinery of the adversarial cases (tests/reliability/): the registry of cases by
category, each run in a forked child (a crash there is a failed test, not a dead worker; a
case that would cost gigabytes meets a memory cap there instead of the machine), and what
"refused" means."""

from __future__ import annotations

import contextlib
import io
import os
import resource
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

CLEAN, FAILED = 0, 1
CASES: dict[str, list[tuple[str, Callable[[Path], bool]]]] = {}
# a case still running after this long is a hang: its child dies of SIGALRM (the slowest
# case takes seconds)
TIME_LIMIT = 300
# a child may allocate this much beyond what it holds when forked: far more than any case
# needs, far less than an allocation sized by a crafted number (8 GB for a label of 10**9)
HEADROOM = 3 << 30


def case(category: str, name: str):
    """Register ``run(folder) -> bool`` (whether the outcome is clean) under ``category``."""

    def register(run: Callable[[Path], bool]) -> Callable[[Path], bool]:
        CASES.setdefault(category, []).append((name, run))
        return run

    return register


def cases_of(module) -> list[tuple[str, str, Callable[[Path], bool]]]:
    """``(category, name, run)`` of every case ``module`` registered, in its order."""
    return [
        (category, name, run)
        for category, cases in CASES.items()
        for name, run in cases
        if run.__module__ == module.__name__
    ]


def refused(run: Callable[[], object]) -> bool:
    """Whether ``run`` raised ``ValueError`` (or exited 2 like a tool)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            run()
    except ValueError:
        return True
    except SystemExit as exit_:
        return exit_.code == 2
    except Exception:
        return False
    return False


def command(argv: list[str]) -> tuple[object, str]:
    """``cl2gnn ARGV`` in this process, quiet: its exit status and what it wrote to stderr."""
    from cl2gnn.cli.main import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code
        except Exception as error:  # a traceback: what the command must never end in
            status = f"{type(error).__name__}: {error}"
    return status, err.getvalue()


TINY = ["--subset", "48", "--batch-size", "24", "--epochs", "1", "--no-progress"]


def simclr(argv: list[str]) -> object:
    """``cl2gnn simclr ARGV`` in this process, quiet (a tiny run with :data:`TINY`)."""
    from cl2gnn.cli.simclr import main

    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return main(argv)


def refused_in_one_line(argv: list[str]) -> bool:
    """Whether ``cl2gnn ARGV`` fails like a tool: exit 2, one line on stderr."""
    status, err = command(argv)
    return status == 2 and len(err.strip().splitlines()) == 1


def _cap_memory() -> None:
    """Cap this process's address space at its present size plus :data:`HEADROOM`."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    limit = pages * resource.getpagesize() + HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def in_child(run: Callable[[Path], bool]) -> str:
    """``run(folder)`` in a forked process: ``"clean"``, ``"failed"`` or ``"crashed (signal)"``."""
    pid = os.fork()
    if pid == 0:
        code = FAILED
        try:
            torch.set_num_threads(1)  # the parent's OpenMP pool did not survive the fork
            signal.alarm(TIME_LIMIT)
            with contextlib.suppress(OSError, ValueError):  # no /proc: no cap
                _cap_memory()
            with tempfile.TemporaryDirectory() as folder:
                code = CLEAN if run(Path(folder)) else FAILED
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"crashed (signal {os.WTERMSIG(status)})"
    return "clean" if os.WEXITSTATUS(status) == CLEAN else "failed"
