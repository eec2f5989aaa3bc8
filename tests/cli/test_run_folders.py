"""What the commands read and write: a checkpoint is loaded as weights only (a pickled
callable in it is refused, never run) and its fields bounded (an epoch past the run's is
refused); a run folder is owned by one live run, a checkpoint in it is kept unless --resume
or --overwrite, a killed writer's partial files are cleared and only those (a user's own
``.lock`` or ``.x.partial.y`` stays); ``cl2gnn node --save`` onto an earlier run is refused
unless --overwrite, which replaces the earlier run as a whole even when killed at any point;
the decoded-image cache follows the files; an output under a dangling link is refused before
any work."""

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from cl2gnn import _files
from cl2gnn.cli import cmdline

TINY = ["--subset", "64", "--batch-size", "32", "--epochs", "1", "--no-progress"]
ROOT = Path(__file__).resolve().parents[2]


def simclr(argv):
    return importlib.import_module("cl2gnn.cli.simclr").main(argv)


def fails(argv, capsys, monkeypatch) -> str:
    """The command's one-line error (exit 2)."""
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        simclr(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    return err


class RunsCode:
    """Unpickling this runs ``touch marker``: what a malicious checkpoint field carries."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_checkpoint_carrying_a_pickled_callable_is_refused_and_never_run(
    tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"
    simclr([*TINY, "--out", str(run)])
    checkpoint = run / "checkpoint.pt"
    state = torch.load(checkpoint, weights_only=True)
    marker = tmp_path / "ran"
    state["epoch"] = RunsCode(marker)
    torch.save(state, checkpoint)
    err = fails([*TINY, "--epochs", "2", "--out", str(run), "--resume"], capsys, monkeypatch)
    assert f"error: {checkpoint}: refused" in err and "posix.system" in err
    assert not marker.exists()


def test_a_folder_holding_a_checkpoint_is_kept_unless_resume_or_overwrite(
    tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"
    simclr([*TINY, "--out", str(run)])
    before = (run / "checkpoint.pt").read_bytes()
    err = fails([*TINY, "--out", str(run)], capsys, monkeypatch)
    assert "--out" in err and "--resume" in err and "--overwrite" in err
    assert (run / "checkpoint.pt").read_bytes() == before
    summary = simclr([*TINY, "--out", str(run), "--overwrite", "--seed", "1"])
    assert summary["epochs"] == 1 and (run / "checkpoint.pt").read_bytes() != before


def test_resume_records_the_epochs_trained_not_the_option(tmp_path, capsys):
    run = tmp_path / "run"
    simclr([*TINY, "--epochs", "3", "--out", str(run)])
    summary = simclr([*TINY, "--epochs", "3", "--out", str(run), "--resume"])
    assert summary["epochs"] == 3 == len(json.loads((run / "log.json").read_text())["losses"])
    assert simclr([*TINY, "--epochs", "4", "--out", str(run), "--resume"])["epochs"] == 4


def crafted(run: Path, **fields) -> Path:
    """``run``'s checkpoint with ``fields`` replaced (plain values: it loads as weights
    only); ``history_<key>`` replaces one list of its history."""
    checkpoint = run / "checkpoint.pt"
    state = torch.load(checkpoint, weights_only=True)
    for key, value in fields.items():
        if key.startswith("history_"):
            state["history"][key.removeprefix("history_")] = value
        else:
            state[key] = value
    torch.save(state, checkpoint)
    return checkpoint


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"epoch": 10**9}, "epoch 1000000000"),  # would train nothing, report 10**9 epochs
        ({"epoch": 3}, "epoch 3"),  # past this run's 2 epochs
        ({"epoch": -1}, "epoch -1"),
        ({"epoch": 1.5}, "epoch 1.5"),
        ({"epoch": True}, "epoch True"),
        ({"history_losses": [0.5] * 7}, "history"),  # 7 losses for the 1 epoch trained
        ({"history_extra": [1.0]}, "history"),
        ({"history_losses": ["0.5"]}, "history"),
    ],
    ids=[
        "epoch 10**9",
        "epoch past the run",
        "negative epoch",
        "float epoch",
        "bool epoch",
        "losses of 7 epochs",
        "unknown history",
        "a loss that is text",
    ],
)
def test_a_checkpoint_field_out_of_its_bounds_is_refused_naming_it(
    tmp_path, capsys, monkeypatch, fields, named
):
    run = tmp_path / "run"
    simclr([*TINY, "--out", str(run)])
    checkpoint = crafted(run, **fields)
    before = checkpoint.read_bytes()
    err = fails([*TINY, "--epochs", "2", "--out", str(run), "--resume"], capsys, monkeypatch)
    assert f"error: {checkpoint}: " in err and named in err
    assert checkpoint.read_bytes() == before


def test_a_resume_past_the_runs_epochs_is_refused_naming_the_fix(tmp_path, capsys, monkeypatch):
    """A checkpoint of 3 epochs resumed with --epochs 2 would train nothing: refused."""
    run = tmp_path / "run"
    simclr([*TINY, "--epochs", "3", "--out", str(run)])
    err = fails([*TINY, "--epochs", "2", "--out", str(run), "--resume"], capsys, monkeypatch)
    assert "epoch 3" in err and "3 epochs or more" in err


# a user's own files named like a lock or a partial file, but not the library's
USERS_OWN = (".thesis.partial.tex", ".lock", ".notes.partial", "notes.txt", ".cl2gnn.partial")


def users_files(folder: Path) -> dict[str, bytes]:
    """Write the user's own files into ``folder``; their contents, to compare later."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in USERS_OWN:
        (folder / name).write_bytes(f"the user's {name}".encode())
    return {name: (folder / name).read_bytes() for name in USERS_OWN}


def contents(folder: Path, names) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in names}


def test_a_stale_partial_is_cleared_and_only_the_librarys_own(tmp_path, capsys):
    run = tmp_path / "run"
    own = users_files(run)
    stale = run / _files.partial_name("checkpoint.pt")
    stale.write_bytes(b"half a checkpoint, its writer killed")
    simclr([*TINY, "--out", str(run)])
    assert sorted(p.name for p in run.iterdir()) == sorted(["checkpoint.pt", "log.json", *own])
    assert contents(run, own) == own


def test_the_lock_and_partial_names_are_the_librarys_alone(tmp_path):
    """Cleared: the library's partial files and staging folders, in the folder and in the
    sub-folders it writes; kept: everything else, whatever its name."""
    own = users_files(tmp_path)
    seed = tmp_path / "seed_0"
    seed_own = users_files(seed)
    stale = [
        tmp_path / _files.partial_name("result.json"),
        seed / _files.partial_name("encoder.pt"),
    ]
    for path in stale:
        path.write_bytes(b"half")
    staging = tmp_path / _files.partial_name("run")
    (staging / "seed_0").mkdir(parents=True)
    (staging / "seed_0" / "encoder.pt").write_bytes(b"a killed run's")
    assert _files.is_partial(staging.name)
    assert not any(_files.is_partial(name) for name in USERS_OWN)
    with _files.locked_folder(tmp_path, subfolders=lambda name: name.startswith("seed_")):
        assert (tmp_path / _files.LOCK_NAME).exists() and _files.LOCK_NAME not in own
    assert not any(path.exists() for path in [*stale, staging])
    assert contents(tmp_path, own) == own and contents(seed, seed_own) == seed_own
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*own, "seed_0"])


def test_a_second_live_run_on_a_folder_is_refused(tmp_path, capsys, monkeypatch):
    """Another process holds the folder (as a run does while it trains): refused in one
    line naming the folder and that process; once it ends, the folder is free."""
    run = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from cl2gnn import _files\n"
            "with _files.locked_folder(sys.argv[1]):\n"
            "    print('held', flush=True); time.sleep(60)",
            str(run),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        err = fails([*TINY, "--out", str(run)], capsys, monkeypatch)
        assert f"{run}: another run (process {holder.pid})" in err
    finally:
        holder.kill()
        holder.wait()
    with _files.locked_folder(run):  # the kernel released the dead holder's lock
        pass
    assert list(run.iterdir()) == []  # and the lock file it left is gone


def test_the_lock_refuses_a_second_holder_in_the_same_process(tmp_path):
    with _files.locked_folder(tmp_path), pytest.raises(ValueError, match="another run"):
        with _files.locked_folder(tmp_path):
            pass
    assert list(tmp_path.iterdir()) == []


def write_folder(root: Path, value: int) -> None:
    from torchvision.io import encode_png

    for split in ("train", "test"):
        for cls in ("a", "b"):
            folder = root / split / cls
            folder.mkdir(parents=True, exist_ok=True)
            image = torch.full((3, 4, 4), value, dtype=torch.uint8)
            (folder / "0.png").write_bytes(encode_png(image).numpy().tobytes())


def test_the_image_cache_follows_the_files_not_the_root(tmp_path):
    """An image replaced under train/<class>/ leaves the root's mtime alone."""
    from cl2gnn.vision.data import read_image_folder

    root = tmp_path / "images"
    write_folder(root, 10)
    assert int(read_image_folder(root, "train").images.max()) == 10
    stamp = root.stat().st_mtime_ns
    time.sleep(0.01)
    write_folder(root, 200)
    assert root.stat().st_mtime_ns == stamp
    assert int(read_image_folder(root, "train").images.max()) == 200


@pytest.mark.parametrize("option", ["--out", "--json"])
def test_an_output_under_a_dangling_link_is_refused_before_any_work(
    tmp_path, capsys, monkeypatch, option
):
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    target = tmp_path / "link" / ("run" if option == "--out" else "r.json")
    err = fails([*TINY, option, str(target)], capsys, monkeypatch)
    assert option in err and "symbolic link" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


# -- cl2gnn node --save: an earlier run is replaced as a whole or not at all ----------------------


def node(argv: list[str]) -> int:
    from cl2gnn.cli.main import main

    return main(["node", *argv])


def node_fails(argv: list[str], capsys, monkeypatch) -> str:
    """The node command's one-line error (exit 2)."""
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        node(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def graph(tmp_path) -> list[str]:
    """``--dataset`` options of a 40-node graph with 3 shipped splits (3 seeds), one epoch."""
    import numpy as np

    from ..datasets.test_node_data import graph_arrays

    path = tmp_path / "G.npz"
    np.savez(path, **graph_arrays(splits=3))
    return ["--dataset", str(path), "--epochs", "1", "--no-progress"]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def check_whole(run: Path) -> None:
    """No seed folder beside a result.json that does not list it, and every seed folder of
    the listed run's method: what a reader of ``run`` must be able to trust."""
    seeds = sorted(p.name for p in run.iterdir() if p.name.startswith("seed_"))
    if not (run / "result.json").exists():
        return  # no result names these seed folders: an interrupted run, shown as such
    (result,) = json.loads((run / "result.json").read_text())
    assert seeds == sorted(f"seed_{s}" for s in result["seeds"])
    for seed in seeds:
        saved = torch.load(run / seed / "encoder.pt", weights_only=True)
        assert saved["method"] == result["method"], seed


def test_save_onto_an_earlier_run_is_refused_unless_overwrite_which_replaces_it_whole(
    tmp_path, graph, capsys, monkeypatch
):
    run = tmp_path / "run"
    own = users_files(run)  # the folder may hold the user's files too: they stay
    assert node([*graph, "--method", "grace", "--seeds", "3", "--save", str(run)]) == 0
    before = snapshot(run)
    check_whole(run)
    new = [*graph, "--method", "cca_ssg", "--seeds", "1", "--save", str(run)]
    err = node_fails(new, capsys, monkeypatch)
    assert "--save" in err and "earlier run" in err and "--overwrite" in err
    assert snapshot(run) == before
    assert node([*new, "--overwrite"]) == 0
    assert sorted(p.name for p in run.iterdir()) == sorted(["result.json", "seed_0", *own])
    check_whole(run)
    assert json.loads((run / "result.json").read_text())[0]["method"] == "cca_ssg"
    assert contents(run, own) == own


def test_an_overwrite_replaces_a_run_of_seeds_past_nine(tmp_path, graph):
    """``seed_10`` and ``seed_11`` (``--seed 10``) are the earlier run's folders, not the
    user's: the overwrite replaces them with its own, and keeps only the user's files."""
    run = tmp_path / "run"
    own = users_files(run)
    seeds = ["--protocol", "gca", "--seeds", "2", "--seed", "10"]  # random splits, any seed
    earlier = [*graph, *seeds, "--method", "grace", "--save", str(run)]
    assert node(earlier) == 0
    assert sorted(p.name for p in run.iterdir()) == sorted(
        ["result.json", "seed_10", "seed_11", *own]
    )
    new = [*graph, "--method", "cca_ssg", "--seeds", "1", "--save", str(run), "--overwrite"]
    assert node(new) == 0
    assert sorted(p.name for p in run.iterdir()) == sorted(["result.json", "seed_0", *own])
    check_whole(run)
    assert contents(run, own) == own


@pytest.mark.parametrize("seed", ["seed_2", "seed_10"])
def test_an_interrupted_first_run_is_an_earlier_run_too(tmp_path, graph, capsys, monkeypatch, seed):
    """Seed folders without a result.json (a run killed while it swapped them in) are an
    earlier run's files, whatever the seed's number of digits: refused without --overwrite."""
    run = tmp_path / "run"
    (run / seed).mkdir(parents=True)
    err = node_fails([*graph, "--method", "grace", "--save", str(run)], capsys, monkeypatch)
    assert seed in err and "--overwrite" in err


def killed_at(step: int, argv: list[str]) -> bool:
    """Run the node command in a forked child that SIGKILLs itself just before its
    ``step``-th rename (``os.replace``: how every file and folder of a run comes into place);
    whether it was killed (else it ran to the end)."""
    import signal

    pid = os.fork()
    if pid == 0:
        try:
            torch.set_num_threads(1)
            rename, calls = os.replace, iter(range(10**6))

            def replace(*args, **kwargs):
                if next(calls) == step:
                    os.kill(os.getpid(), signal.SIGKILL)
                return rename(*args, **kwargs)

            os.replace = replace
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                os.dup2(null.fileno(), 2)
                node(argv)
        finally:
            os._exit(0)
    deadline = time.monotonic() + 120
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError(f"the run killed at rename {step} hung")
        time.sleep(0.05)
    status = waited[1]
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_an_overwrite_killed_at_any_point_leaves_no_seed_beside_a_result_not_listing_it(
    tmp_path, graph
):
    """The issue's case: a 1-seed run of another method over a 3-seed run, killed before
    each of its renames in turn, each time from the same earlier run (SIGKILL: no clean-up
    runs; SIGTERM's default is the same). After every kill the folder holds the earlier run
    whole, or no result.json; the run after the last kill (the new run half swapped in)
    clears what it left (staging folders, partial files) and leaves the new run alone."""
    import shutil

    run, earlier = tmp_path / "run", tmp_path / "earlier"
    assert node([*graph, "--method", "grace", "--seeds", "3", "--save", str(run)]) == 0
    shutil.copytree(run, earlier)
    overwrite = [*graph, "--method", "cca_ssg", "--seeds", "1", "--save", str(run), "--overwrite"]
    step = 0
    while True:
        shutil.rmtree(run)
        shutil.copytree(earlier, run)
        if not killed_at(step, overwrite):
            break
        check_whole(run)
        step += 1
    assert step > 5  # every file of the new run, and the swap, were each a point of death
    shutil.rmtree(run)
    shutil.copytree(earlier, run)
    assert killed_at(step - 1, overwrite)  # before the last rename: the swap half done
    assert any(p.name.startswith(".cl2gnn-") for p in run.rglob("*"))
    assert node(overwrite) == 0
    check_whole(run)
    assert sorted(p.relative_to(run).as_posix() for p in run.rglob("*")) == [
        "result.json",
        "seed_0",
        *(f"seed_0/{name}" for name in sorted(os.listdir(run / "seed_0"))),
    ]
    assert json.loads((run / "result.json").read_text())[0]["seeds"] == [0]
