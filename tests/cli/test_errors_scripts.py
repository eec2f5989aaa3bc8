"""The image commands fail like tools on bad input: ``prog: error: ...`` on one stderr line
naming the option, exit status 2, no traceback, nothing written — argument errors before
torch is imported — and a run writes its outputs only whole. (The benchmark scripts':
tests/benchmarks/test_script_errors.py.)"""

import importlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from cl2gnn.cli import cmdline

from .._tool_errors import assert_one_line_naming, heavy_imports, run_in_process

TINY = ["--subset", "64", "--batch-size", "32", "--epochs", "1", "--no-progress"]

# (command, arguments, what the message must name); OUT stands for tmp_path/out, which holds
# the user's file.txt
ARGUMENT_ERRORS = [
    ("cl2gnn simclr", ["--epochs", "0"], "--epochs"),
    ("cl2gnn simclr", ["--epochs", "-1"], "--epochs"),
    ("cl2gnn simclr", ["--batch-size", "0"], "--batch-size"),
    ("cl2gnn simclr", ["--batch-size", "1"], "--batch-size"),  # no negatives: loss 0
    ("cl2gnn simclr", ["--subset", "0"], "--subset"),
    ("cl2gnn simclr", ["--subset", "1"], "--subset"),
    ("cl2gnn simclr", ["--lr", "0"], "--lr"),
    ("cl2gnn simclr", ["--lr", "nan"], "--lr"),
    ("cl2gnn simclr", ["--weight-decay", "-1"], "--weight-decay"),
    ("cl2gnn simclr", ["--temperature", "0"], "--temperature"),
    ("cl2gnn simclr", ["--attention", "-1"], "--attention"),
    ("cl2gnn simclr", ["--nn-positives", "-1"], "--nn-positives"),
    ("cl2gnn simclr", ["--batch-size", "8", "--nn-positives", "16"], "--nn-positives"),
    ("cl2gnn simclr", ["--subset", "4", "--nn-positives", "8"], "--nn-positives"),
    ("cl2gnn simclr", ["--attention", "0", "--kernel", "sum"], "--attention, --kernel"),
    ("cl2gnn simclr", ["--kernel", "cauchy"], "--kernel"),
    ("cl2gnn simclr", ["--distributed", "all"], "--distributed"),
    ("cl2gnn simclr", ["--dataset", "nope"], "--dataset"),
    ("cl2gnn simclr", ["--dataset", "folder"], "--data-root"),
    ("cl2gnn simclr", ["--data-root", "OUT/missing"], "--data-root"),
    ("cl2gnn simclr", ["--arch", "vit"], "--arch"),
    ("cl2gnn simclr", ["--optimizer", "adam"], "--optimizer"),
    ("cl2gnn simclr", ["--seed", "-1"], "--seed"),
    ("cl2gnn simclr", ["--device", "gpu 0"], "--device"),
    ("cl2gnn simclr", ["--out", "OUT/file.txt"], "--out"),
    ("cl2gnn simclr", ["--json", "OUT"], "--json"),
    ("cl2gnn simclr", ["--resume"], "--resume"),
    ("cl2gnn simclr", ["--resume", "--out", "OUT"], "--resume"),  # no checkpoint there
    (
        "cl2gnn simclr",
        ["--epochs", "0", "--out", "OUT/run", "--json", "OUT/r.json"],
        "--epochs",
    ),
    ("cl2gnn simsiam", ["--epochs", "0"], "--epochs"),
    ("cl2gnn simsiam", ["--batch-size", "0"], "--batch-size"),
    ("cl2gnn simsiam", ["--multistage", "1"], "--multistage"),  # plain SimSiam
    ("cl2gnn simsiam", ["--multistage", "-1"], "--multistage"),
    ("cl2gnn simsiam", ["--warmup-stages", "2"], "--warmup-stages"),  # no --multistage
    ("cl2gnn simsiam", ["--multistage", "2", "--warmup-stages", "-1"], "--warmup-stages"),
    (
        "cl2gnn simsiam",
        ["--multistage", "2", "--epochs", "4", "--warmup-stages", "4"],  # memory never used
        "--warmup-stages",
    ),
    ("cl2gnn simsiam", ["--memory-dtype", "float16"], "--memory-dtype"),
]
# refused after parsing, by torch (imported for the question): no CUDA, or too few devices
DEVICE_ERRORS = [
    ("cl2gnn simclr", ["--device", "cuda:99", *TINY]),
    ("cl2gnn simsiam", ["--device", "cuda:99", *TINY]),
]
if not torch.cuda.is_available():
    DEVICE_ERRORS += [("cl2gnn simclr", ["--device", "cuda", *TINY])]


def case_id(command, args, *_):
    return " ".join([command, *args])


def concrete(args, out):
    """``args`` with OUT filled in."""
    return [arg.replace("OUT", str(out)) for arg in args]


@pytest.fixture
def out(tmp_path, monkeypatch):
    """tmp_path as the working folder, with OUT/file.txt the user's; a run that gets past
    the checks fails the test instead of training."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "file.txt").write_text("the user's")
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)

    def started(*args, **kwargs):
        raise AssertionError("the run started: the arguments were accepted")

    monkeypatch.setattr("cl2gnn.cli.pretrain._run", started)
    return folder


@pytest.mark.parametrize(
    ("script", "args", "named"), [pytest.param(*c, id=case_id(*c)) for c in ARGUMENT_ERRORS]
)
def test_argument_error_is_one_line_exit_2_nothing_written(
    out, capsys, monkeypatch, script, args, named
):
    args = concrete(args, out)
    code = run_in_process(script, args, monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, script, named)
    assert sorted(p.name for p in out.parent.rglob("*")) == ["file.txt", "out"]


@pytest.mark.parametrize(
    ("script", "args"), [pytest.param(*c, id=case_id(*c)) for c in DEVICE_ERRORS]
)
def test_unusable_device_refused_before_any_work(out, capsys, monkeypatch, script, args):
    code = run_in_process(script, args, monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, script, "--device")
    assert sorted(p.name for p in out.parent.rglob("*")) == ["file.txt", "out"]


def test_argument_errors_import_no_heavy_module(tmp_path):
    """What keeps them fast: torch alone takes seconds to import."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "file.txt").write_text("the user's")
    cases = [(command, concrete(args, tmp_path / "out")) for command, args, _ in ARGUMENT_ERRORS]
    cases += [(command, ["--help"]) for command in sorted({c[0] for c in ARGUMENT_ERRORS})]
    assert heavy_imports(cases, tmp_path) == []


@pytest.mark.parametrize("args", [["--epochs", "0"], ["--batch-size", "0"]], ids=" ".join)
def test_example_command_line_fails_like_a_tool(tmp_path, args):
    """The issue's rows, as a user types them: a separate interpreter, its exit status."""
    env = {k: v for k, v in os.environ.items() if k != cmdline.DEBUG_VARIABLE}
    result = subprocess.run(
        [sys.executable, "-m", "cl2gnn", "simclr", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert_one_line_naming(result.returncode, result.stderr, "cl2gnn simclr", args[0])
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_help_prints_no_warning(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "cl2gnn", "simclr", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert result.stderr == "" and "--nn-positives" in result.stdout


def load_example(name):
    return vars(importlib.import_module(f"cl2gnn.cli.{name}"))


def test_run_writes_whole_outputs_only(tmp_path, capsys):
    run_folder, summary = tmp_path / "run", tmp_path / "result.json"
    load_example("simclr")["main"]([*TINY, "--out", str(run_folder), "--json", str(summary)])
    assert sorted(p.name for p in tmp_path.rglob("*")) == [
        "checkpoint.pt",
        "log.json",
        "result.json",
        "run",
    ]
    assert json.loads(summary.read_text())["epochs"] == 1
    assert len(json.loads((run_folder / "log.json").read_text())["losses"]) == 1


def test_failed_run_leaves_no_result(tmp_path, capsys, monkeypatch):
    """An error in the user's data during the run: one line, exit 2, no JSON, no log;
    CL2GNN_DEBUG=1 lets it raise."""

    def bad_features(self):
        raise ValueError("features: NaN in row 3")

    monkeypatch.setattr("cl2gnn.vision.train.Pretrainer.knn_monitor", bad_features)
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    argv = [*TINY, "--out", str(tmp_path / "run"), "--json", str(tmp_path / "r.json")]
    main = load_example("simclr")["main"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith("error: features: NaN in row 3\n")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(cmdline.DEBUG_VARIABLE, "1")
    with pytest.raises(ValueError, match="NaN in row 3"):
        main(argv)


@pytest.mark.parametrize("output", ["--json", "--out"])
def test_write_cut_short_leaves_no_partial_file(tmp_path, capsys, monkeypatch, output):
    """The disk fills while the summary (--json) or the log (--out) is written: one line,
    exit 2, and no JSON file at all rather than half of one."""
    write_text = Path.write_text

    def disk_full(self, text, *args, **kwargs):
        write_text(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(28, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", disk_full)
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    target = tmp_path / ("r.json" if output == "--json" else "run")
    with pytest.raises(SystemExit) as exit_info:
        load_example("simclr")["main"]([*TINY, output, str(target)])
    assert exit_info.value.code == 2
    assert "No space left on device" in capsys.readouterr().err
    left = sorted(p.name for p in tmp_path.rglob("*"))
    assert left == ([] if output == "--json" else ["checkpoint.pt", "run"])


def test_unreadable_checkpoint_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    checkpoint = tmp_path / "checkpoint.pt"
    checkpoint.write_bytes(b"half a checkpoint")
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        load_example("simclr")["main"]([*TINY, "--out", str(tmp_path), "--resume"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"error: {checkpoint}: cannot resume from it" in err
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]


def png_bytes():
    from torchvision.io import encode_png

    return encode_png(torch.zeros(3, 8, 8, dtype=torch.uint8)).numpy().tobytes()


def write_image_folder(root, corrupt=None):
    """A one-class ImageFolder pair, ``train`` and ``test``; returns the file the message
    must name: ``corrupt`` "image" cuts the second PNG short, "zip" writes each split as a
    truncated zip, "member" as a zip whose second image fails its CRC."""
    png = png_bytes()
    for split in ("train", "test"):
        if corrupt == "zip":
            (root / f"{split}.zip").write_bytes(b"PK\x03\x04 cut short")
            continue
        if corrupt == "member":
            with zipfile.ZipFile(root / f"{split}.zip", "w") as archive:  # stored: bytes as-is
                archive.writestr(f"{split}/cat/0.png", png)
                archive.writestr(f"{split}/cat/1.png", png)
            data = (root / f"{split}.zip").read_bytes()
            at = data.rindex(png) + 40  # inside the second image's stored bytes
            (root / f"{split}.zip").write_bytes(data[:at] + b"\xff" + data[at + 1 :])
            continue
        for i in range(2):
            image = root / split / "cat" / f"{i}.png"
            image.parent.mkdir(parents=True, exist_ok=True)
            image.write_bytes(png[: len(png) // 2] if i == 1 and corrupt == "image" else png)
    return {
        "image": f"{root / 'train' / 'cat' / '1.png'}: cannot decode the image",
        "zip": f"{root / 'train.zip'}: not a readable zip file",
        "member": f"{root / 'train.zip'}: cannot read train/cat/1.png in the zip",
        None: None,
    }[corrupt]


@pytest.mark.filterwarnings("ignore:The image decoding:DeprecationWarning")
@pytest.mark.parametrize("corrupt", ["image", "zip", "member"])
def test_unreadable_dataset_is_one_line_naming_it(tmp_path, capsys, monkeypatch, corrupt):
    root = tmp_path / "data"
    root.mkdir()
    named = write_image_folder(root, corrupt)
    monkeypatch.setenv("CL2GNN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    argv = ["--dataset", "folder", "--data-root", str(root), *TINY, "--json", str(tmp_path / "r")]
    with pytest.raises(SystemExit) as exit_info:
        load_example("simclr")["main"](argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f": error: {named} (" in err, err
    assert ".cpp" not in err  # torchvision's source location is not the user's business
    assert not (tmp_path / "r").exists() and not (tmp_path / "cache").exists()


@pytest.mark.filterwarnings("ignore:The image decoding:DeprecationWarning")
def test_image_cache_is_written_whole_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    from cl2gnn.vision.data import read_image_folder

    root = tmp_path / "data"
    root.mkdir()
    write_image_folder(root)
    monkeypatch.setenv("CL2GNN_CACHE", str(tmp_path / "cache"))
    first = read_image_folder(root, "train")
    (cached,) = (tmp_path / "cache" / "vision").iterdir()  # no partial file beside it
    cached.write_bytes(cached.read_bytes()[:100])  # a run killed while writing it, before
    again = read_image_folder(root, "train")
    assert torch.equal(again.images, first.images) and again.classes == ["cat"]
    assert [p.name for p in cached.parent.iterdir()] == [cached.name]


def test_cifar_that_cannot_be_read_or_downloaded_names_its_folder(tmp_path, monkeypatch):
    import urllib.error

    import torchvision

    from cl2gnn.vision.data import load_images

    def offline(root, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(torchvision.datasets, "CIFAR100", offline)
    with pytest.raises(ValueError, match=f"^{tmp_path}: cifar100 is missing or damaged"):
        load_images("cifar100", str(tmp_path))


def test_batch_must_split_over_the_torchrun_processes(capsys, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(SystemExit) as exit_info:
        load_example("simsiam")["parse"](["--batch-size", "64"])
    assert exit_info.value.code == 2
    assert "argument --batch-size: must be a multiple of the 3 processes" in capsys.readouterr().err
