"""Bad input at the command line fails like a tool: ``prog: error: ...`` on one stderr line
naming the option, exit status 2, no traceback, nothing written — and, for argument errors,
before torch is imported."""

import argparse
import importlib
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from cl2gnn import _files
from cl2gnn.cli import cmdline
from cl2gnn.cli.main import main
from cl2gnn.studies import STUDIES, run_study

from .._tool_errors import HEAVY_MODULES


def run_cl2gnn(args, cwd, **env):
    return subprocess.run(
        [sys.executable, "-m", "cl2gnn", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
        timeout=120,
    )


def assert_fails_like_a_tool(result, prog, named):
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{prog}: error: ") and named in lines[0], lines[0]
    assert "Traceback" not in result.stderr + result.stdout


# (arguments, the option or value the message must name); OUT stands for tmp_path/out
ARGUMENT_ERRORS = [
    (["nope"], "'nope'"),
    (["simulate", "nope"], "'nope'"),
    (["simulate"], "study --list"),
    (["simulate", "proposition2", "--steps", "0"], "--steps"),
    (["simulate", "proposition2", "--steps", "-3"], "--steps"),
    (["simulate", "proposition2", "--steps", "ten"], "--steps"),
    (["simulate", "proposition2", "--seed", "-1"], "--seed"),
    (["simulate", "proposition2", "--seed", "4294967296"], "--seed"),
    (["simulate", "proposition2", "--out", "OUT/file.txt"], "--out"),
    (["verify", "--nodes", "0"], "--nodes"),
    (["verify", "--nodes", "3"], "--nodes"),
    (["verify", "--nodes", "1.5"], "--nodes"),
    (["verify", "--dim", "0"], "--dim"),
    (["verify", "--tol", "0"], "--tol"),
    (["verify", "--tol", "-1e-3"], "--tol"),
    (["verify", "--tol", "nan"], "--tol"),
    (["verify", "--device", "gpu 0"], "--device"),
    (["verify", "--json", "OUT"], "--json"),
    (["verify", "--json", "OUT/file.txt/result.json"], "--json"),
    (["verify", "--nodes", "0", "--json", "OUT/verify.json"], "--nodes"),
    (["node", "--dataset", "nope"], "--dataset"),
    (["node", "--dataset", "OUT/missing.npz"], "--dataset"),
]


@pytest.mark.parametrize(
    ("args", "named"), [pytest.param(*case, id=" ".join(case[0])) for case in ARGUMENT_ERRORS]
)
def test_argument_error_is_one_line_exit_2_nothing_written(tmp_path, args, named):
    out = tmp_path / "out"
    out.mkdir()
    (out / "file.txt").write_text("the user's")
    args = [arg.replace("OUT", str(out)) for arg in args]
    result = run_cl2gnn(args, cwd=tmp_path)
    prog = "cl2gnn" if args[0] == "nope" else f"cl2gnn {args[0]}"
    assert_fails_like_a_tool(result, prog, named)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["file.txt", "out"]


def test_help_and_argument_errors_import_no_heavy_module(tmp_path):
    """What keeps them fast: torch alone takes seconds to import."""
    code = (
        "import sys\n"
        "from cl2gnn.cli.main import main\n"
        "for argv in (['--help'], ['simulate', '--help'], ['node', '--help'],"
        " ['simulate', 'nope'], ['verify', '--nodes', '0']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted(set({HEAVY_MODULES!r}) & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"


def test_help_prints_no_warning(tmp_path):
    result = run_cl2gnn(["--help"], cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""


@pytest.mark.parametrize(
    "device", ["cuda:99", pytest.param("cuda", id="cuda-without-cuda")], ids=str
)
def test_unusable_device_refused_before_any_work(tmp_path, device):
    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = run_cl2gnn(["verify", "--device", device, "--json", "v.json"], cwd=tmp_path)
    assert_fails_like_a_tool(result, "cl2gnn verify", f"--device: '{device}'")
    assert list(tmp_path.iterdir()) == []


def test_library_value_error_meets_the_command_boundary(tmp_path, capsys, monkeypatch):
    """A ValueError raised while the command runs (the library's check of the user's data)
    is one line and exit 2, the JSON unwritten; CL2GNN_DEBUG=1 lets it raise."""

    def bad_data(*args):
        raise ValueError("features.npy: NaN in row 3")

    monkeypatch.setattr("cl2gnn.cli.verify.run_checks", bad_data)
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    argv = ["verify", "--json", str(tmp_path / "v.json")]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "cl2gnn verify: error: features.npy: NaN in row 3\n"
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(cmdline.DEBUG_VARIABLE, "1")
    with pytest.raises(ValueError, match="NaN in row 3"):
        main(argv)


def test_boundary_names_the_file_of_an_os_error(capsys, monkeypatch):
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    with pytest.raises(SystemExit) as exit_info, cmdline.user_errors("prog"):
        Path("/nonexistent/data.npz").read_bytes()
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "prog: error: /nonexistent/data.npz: No such file or directory\n"
    )


def test_boundary_joins_a_multi_line_message_and_debug_reraises(capsys, monkeypatch):
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    with pytest.raises(SystemExit), cmdline.user_errors("prog"):
        raise ValueError("labels out of range\nin y.npy")
    assert capsys.readouterr().err == "prog: error: labels out of range in y.npy\n"
    monkeypatch.setenv(cmdline.DEBUG_VARIABLE, "1")
    with pytest.raises(ValueError, match="labels"), cmdline.user_errors("prog"):
        raise ValueError("labels out of range")


def test_atomic_path_replaces_only_on_success(tmp_path):
    target = tmp_path / "result.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), _files.atomic_path(target) as partial:
        partial.write_text("half")
        raise RuntimeError("interrupted")
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
    assert target.read_text() == "old"
    _files.write_text_atomic(target, "new")
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
    assert target.read_text() == "new"


def test_atomic_path_keeps_the_suffix_for_writers_that_read_it(tmp_path):
    with _files.atomic_path(tmp_path / "figure.png") as partial:
        assert partial.suffix == ".png" and partial.parent == tmp_path
        partial.write_bytes(b"png")
    assert [p.name for p in tmp_path.iterdir()] == ["figure.png"]


def test_failed_study_leaves_no_figure_or_json(tmp_path, monkeypatch):
    def draw_then_fail(out, steps=10, seed=0):
        (out / "broken.png").write_bytes(b"half a figure")
        raise RuntimeError("interrupted")

    monkeypatch.setitem(STUDIES, "broken", types.SimpleNamespace(run=draw_then_fail))
    with pytest.raises(RuntimeError, match="interrupted"):
        run_study("broken", tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (cmdline.positive_int, "0", "must be an integer in [1, 2147483647], got 0"),
        (cmdline.non_negative_int, "-1", "must be an integer in [0, 2147483647], got -1"),
        (cmdline.int_range(2, 5), "6", "must be an integer in [2, 5], got 6"),
        (cmdline.positive_float, "inf", "must be a number in (0, 3.40282e+38], got inf"),
        (cmdline.non_negative_float, "-0.1", "must be a number in [0, 3.40282e+38], got -0.1"),
        (cmdline.probability, "1.5", "must be a number in [0, 1], got 1.5"),
        (cmdline.probability, "half", "must be a number in [0, 1], got 'half'"),
        (cmdline.existing_path, "/nonexistent", "no such file or folder: '/nonexistent'"),
        (cmdline.device, "cuda:x", "must be a device such as cpu, cuda or cuda:1, got 'cuda:x'"),
    ],
)
def test_argument_types_refuse_with_the_rule(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match="^" + re.escape(message)):
        parse(text)


def test_argument_types_accept_their_bounds(tmp_path):
    assert cmdline.positive_int("1") == 1 and cmdline.non_negative_int("0") == 0
    assert cmdline.probability("0") == 0.0 and cmdline.probability("1") == 1.0
    assert cmdline.non_negative_float("0") == 0.0 and cmdline.positive_float("1e-12") == 1e-12
    assert cmdline.existing_path(str(tmp_path)) == str(tmp_path)
    assert cmdline.output_file(str(tmp_path / "new" / "r.json")) == str(tmp_path / "new" / "r.json")
    assert cmdline.device("cuda:1") == "cuda:1"


def test_truncated_dataset_file_is_named_in_one_line(tmp_path, capsys, monkeypatch):
    whole = tmp_path / "whole.npz"
    rng = np.random.default_rng(0)
    np.savez_compressed(
        whole,
        node_features=rng.normal(size=(50, 4)),
        node_labels=np.arange(50) % 2,
        edges=rng.integers(0, 50, size=(100, 2)),
        train_masks=np.arange(50) < 20,
        val_masks=(np.arange(50) >= 20) & (np.arange(50) < 30),
        test_masks=np.arange(50) >= 30,
    )
    data = whole.read_bytes()
    middle = len(data) // 2
    damaged = {
        "truncated": data[:200],  # no zip directory
        "corrupted": data[:middle] + bytes(64) + data[middle + 64 :],  # a member's bytes
    }
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    for name, content in damaged.items():
        path = tmp_path / f"{name}.npz"
        path.write_bytes(content)
        with pytest.raises(SystemExit) as exit_:  # in this process: a new one imports torch
            main(["node", "--dataset", str(path), "--epochs", "1", "--no-progress"])
        captured = capsys.readouterr()
        assert exit_.value.code == 2 and len(captured.err.splitlines()) == 1, captured.err
        assert captured.err.startswith("cl2gnn node: error: ") and str(path) in captured.err
        assert "Traceback" not in captured.err + captured.out


# -- an output never replaces an input ------------------------------------------------------------

# (argv, the two options the message names); in tmp_path: G.npz (a graph), RUN (a saved run:
# result.json, seed_0/encoder.pt), cfg.json (a --config file), DATA (a dataset root holding
# texas.npz and G.npz's link LINK.npz); the node runs are one short seed if not refused
QUICK = ["--method", "grace", "--seeds", "1", "--epochs", "1", "--no-progress"]
DESTRUCTIVE = [
    (["embed", "--checkpoint", "RUN/seed_0", "--dataset", "G.npz", "--out", "G.npz"], "--dataset"),
    (
        ["embed", "--checkpoint", "RUN/seed_0", "--dataset", "G.npz", "--out", "DATA/LINK.npz"],
        "--dataset",
    ),
    (["embed", "--checkpoint", "RUN/seed_0", "--out", "RUN/seed_0/encoder.pt"], "--checkpoint"),
    (
        ["embed", "--checkpoint", "RUN/seed_0/encoder.pt", "--out", "RUN/seed_0/encoder.pt"],
        "--checkpoint",
    ),
    (["node", "--dataset", "G.npz", "--json", "G.npz", *QUICK], "--dataset"),
    (["node", "--dataset", "DATA/LINK.npz", "--json", "./DATA/../G.npz", *QUICK], "--dataset"),
    (
        ["node", "--dataset", "G.npz", "--config", "cfg.json", "--json", "cfg.json", *QUICK],
        "--config",
    ),
    (
        ["node", "--dataset", "G.npz", "--save", "RUN", "--json", "RUN/seed_0/encoder.pt", *QUICK],
        "--save",
    ),
    (
        ["node", "--dataset", "G.npz", "--save", "RUN", "--json", "RUN/result.json", *QUICK],
        "--save",
    ),
    (["node", "--dataset", "G.npz", "--save", ".", *QUICK], "--dataset"),
    (
        ["node", "--dataset", "texas", "--root", "DATA", "--json", "DATA/texas.npz", *QUICK],
        "--root",
    ),
    (["node", "--dataset", "G.npz", "--root", "DATA", "--save", "DATA", *QUICK], "--root"),
    (["simclr", "--dataset", "folder", "--data-root", "DATA", "--out", "DATA"], "--data-root"),
    (["simclr", "--dataset", "folder", "--data-root", "DATA", "--out", "."], "--data-root"),
    (["simclr", "--out", "RUN", "--json", "RUN/log.json"], "--out"),
]


@pytest.mark.parametrize(
    ("args", "named"), [pytest.param(*case, id=" ".join(case[0][:8])) for case in DESTRUCTIVE]
)
def test_an_output_that_would_replace_an_input_is_refused_nothing_written(
    tmp_path, capsys, monkeypatch, args, named
):
    """Paths compared as the file system resolves them (relative, ``..``, symbolic links):
    one line naming the output and the input, exit 2, every file as it was."""
    from ..datasets.test_node_data import graph_arrays

    np.savez(tmp_path / "G.npz", **graph_arrays())
    (tmp_path / "RUN" / "seed_0").mkdir(parents=True)
    (tmp_path / "RUN" / "seed_0" / "encoder.pt").write_bytes(b"the run's encoder")
    (tmp_path / "RUN" / "result.json").write_text("[]")
    (tmp_path / "cfg.json").write_text('{"epochs": 1}')
    (tmp_path / "DATA").mkdir()
    np.savez(tmp_path / "DATA" / "texas.npz", **graph_arrays())
    (tmp_path / "DATA" / "LINK.npz").symlink_to(tmp_path / "G.npz")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        if args[0] == "simclr":
            importlib.import_module("cl2gnn.cli.simclr").main(args[1:], "cl2gnn simclr")
        else:
            main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"cl2gnn {args[0]}: error: ") and named in err, err
    assert any(option in err for option in ("--out", "--json", "--save")), err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
