"""What the image commands read and write: a checkpoint is
loaded as weights only (a pickled callable in it is refused, never run); a run folder is
owned by one live run, a checkpoint in it is kept unless --resume or --overwrite, a resume
records the epochs trained and a killed writer's .partial is cleared; the decoded-image
cache follows the files; an output under a dangling link is refused before any work."""

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
from cl2gnn.apps import cmdline

TINY = ["--subset", "64", "--batch-size", "32", "--epochs", "1", "--no-progress"]
ROOT = Path(__file__).resolve().parents[1]


def simclr(argv):
    return importlib.import_module("cl2gnn.apps.simclr").main(argv)


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
    summary = simclr([*TINY, "--epochs", "2", "--out", str(run), "--resume"])
    assert summary["epochs"] == 3 == len(json.loads((run / "log.json").read_text())["losses"])
    assert simclr([*TINY, "--epochs", "4", "--out", str(run), "--resume"])["epochs"] == 4


def test_a_stale_partial_is_cleared_and_the_lock_left_behind_by_nobody(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    stale = run / ".checkpoint.0badf00d.partial.pt"
    stale.write_bytes(b"half a checkpoint, its writer killed")
    simclr([*TINY, "--out", str(run)])
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint.pt", "log.json"]


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
