"""Distributed runs exit cleanly. On torch 2.14 a few percent of the processes of a gloo run
died with SIGABRT ("terminate called without an active exception") during the
interpreter's teardown after ``destroy_process_group``, their work done; the command now
ends them with ``os._exit`` once flushed (:func:`cl2gnn.cli.main.run`).

* The mechanism, deterministically: :func:`~cl2gnn.cli.main.run` after a process group
  ended flushes, then calls ``os._exit`` with the command's status (monkeypatched here),
  and leaves a run without a group to ``sys.exit``.
* The same through a real launch: ``python -m cl2gnn simclr`` on 2 gloo processes whose
  teardown is made to abort every time (an ``atexit`` handler raising SIGABRT, where
  torch's teardown aborts now and then) exits 0 on every rank.
* The abort itself, by chance: ``LAUNCHES`` launches on 2 and 3 processes, none aborted
  (``CL2GNN_EXIT_LAUNCHES``, 5 by default, each launch a few seconds; 50 to see a few
  percent of aborts with confidence). Marked ``exit_aborts``: run by ``.ci/run``."""

from __future__ import annotations

import collections
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cl2gnn.cli import main as cli
from cl2gnn.distributed import launch as distributed_launch

from .._ranks import free_port

ROOT = Path(__file__).resolve().parents[2]
LAUNCHES = int(os.environ.get("CL2GNN_EXIT_LAUNCHES", "5"))
COMMAND = ["simclr", "--subset", "48", "--batch-size", "24", "--epochs", "1"]
OPTIONS = ["--no-progress", "--device", "cpu"]
# a teardown that aborts every time: what torch's did in a few percent of the processes
ABORTING_TEARDOWN = (
    "import atexit, os, runpy, signal\n"
    "atexit.register(lambda: os.kill(os.getpid(), signal.SIGABRT))\n"
    "runpy.run_module('cl2gnn', run_name='__main__', alter_sys=True)\n"
)


class Exited(Exception):
    """``os._exit``, recorded instead of ending the test's process."""


class Stream(io.StringIO):
    """A standard stream that records its flushes in ``events``."""

    def __init__(self, events: list, name: str) -> None:
        super().__init__()
        self.events, self.name = events, name

    def flush(self) -> None:
        self.events.append(f"flush {self.name}")
        super().flush()


@pytest.fixture
def command_run(monkeypatch):
    """``cli.run`` on a command that returns or raises ``outcome`` (``group``: whether it
    left a process group): what was written, flushed and exited with, in order."""

    def run_with(outcome, group: bool):
        events: list = []
        out, err = Stream(events, "stdout"), Stream(events, "stderr")
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setattr(cli, "keep_freed_blocks", lambda: None)  # the test's heap
        monkeypatch.setattr(distributed_launch, "_ENDED", group)

        def main():
            print("the command's last line")
            if isinstance(outcome, SystemExit):
                raise outcome
            return outcome

        def exit_now(code):
            events.append(("os._exit", code))
            raise Exited

        monkeypatch.setattr(cli, "main", main)
        monkeypatch.setattr(os, "_exit", exit_now)
        with pytest.raises((Exited, SystemExit)) as ended:
            cli.run()
        return events, ended.value, out.getvalue(), err.getvalue()

    return run_with


@pytest.mark.parametrize(
    ("outcome", "code"),
    [(0, 0), (None, 0), (3, 3), (SystemExit(2), 2), ("cl2gnn simclr: error: x", 1)],
    ids=["0", "None", "3", "SystemExit(2)", "a message"],
)
def test_after_a_process_group_the_command_flushes_then_exits_with_os_exit(
    command_run, outcome, code
):
    events, ended, out, err = command_run(outcome, group=True)
    assert isinstance(ended, Exited)  # not sys.exit: the interpreter's teardown never runs
    assert events == ["flush stdout", "flush stderr", ("os._exit", code)]
    assert out == "the command's last line\n"
    assert err == (f"{outcome}\n" if isinstance(outcome, str) else "")


@pytest.mark.parametrize("outcome", [0, 2, "a message"])
def test_without_a_process_group_the_command_exits_as_usual(command_run, outcome):
    events, ended, _, _ = command_run(outcome, group=False)
    assert isinstance(ended, SystemExit) and ended.code == outcome
    assert not [event for event in events if event[0] == "os._exit"]


def launch(world: int, out: Path, python: list[str]) -> list[tuple[int, str]]:
    """One run of the command on ``world`` processes, started as torchrun starts them (its
    environment variables) with ``python ARGS`` before the command's words: each rank's
    exit status and the end of its stderr."""
    env = {
        **os.environ,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": str(world),
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    ranks = [
        subprocess.Popen(
            [sys.executable, *python, *COMMAND, *OPTIONS, "--json", str(out / f"r{rank}.json")],
            env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(world)
    ]
    return [(rank.wait(timeout=300), rank.stderr.read()[-300:]) for rank in ranks]


def test_a_teardown_that_would_abort_never_runs_after_a_distributed_command(tmp_path):
    ranks = launch(2, tmp_path, ["-c", ABORTING_TEARDOWN])
    assert [code for code, _ in ranks] == [0, 0], ranks
    assert (tmp_path / "r0.json").is_file()  # rank 0 wrote its summary


@pytest.mark.exit_aborts
@pytest.mark.parametrize("world", [2, 3])
def test_every_process_of_a_distributed_command_exits_zero(tmp_path, world):
    codes, failures = collections.Counter(), []
    for _ in range(LAUNCHES):
        for code, err in launch(world, tmp_path, ["-m", "cl2gnn"]):
            codes[code] += 1
            if code != 0:
                failures.append((code, err))
    aborts = codes[-signal.SIGABRT] + codes[128 + signal.SIGABRT]
    assert aborts == 0 and not failures, (dict(codes), failures[:3])
    assert (tmp_path / "r0.json").is_file()  # rank 0 wrote its summary each time
