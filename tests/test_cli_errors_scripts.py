"""The image commands and the benchmarks fail like tools on bad input: ``prog: error: ...`` on one
stderr line naming the option, exit status 2, no traceback, nothing written — argument
errors before torch is imported — and a run writes its outputs only whole."""

import importlib
import json
import os
import runpy
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from cl2gnn.apps import cmdline
from cl2gnn.node.names import METHODS

ROOT = Path(__file__).resolve().parents[1]
HEAVY_MODULES = ("torch", "torch_geometric", "torchvision", "faiss", "matplotlib", "sklearn")
TINY = ["--subset", "64", "--batch-size", "32", "--epochs", "1", "--no-progress"]

# (script, arguments, what the message must name); OUT stands for tmp_path/out, which holds
# the user's file.txt, CONFIGS for a shipped configuration list
CONFIGS = str(ROOT / "benchmarks" / "configs" / "cora_public.json")
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
    ("benchmarks/accuracy/image_ssl.py", ["nope"], "'nope'"),
    ("benchmarks/accuracy/image_ssl.py", ["throughput", "--steps", "0"], "--steps"),
    ("benchmarks/accuracy/image_ssl.py", ["throughput", "--batch-size", "1"], "--batch-size"),
    ("benchmarks/accuracy/image_ssl.py", ["throughput", "--arch", "vit"], "--arch"),
    ("benchmarks/accuracy/image_ssl.py", ["throughput", "--json", "OUT"], "--json"),
    ("benchmarks/accuracy/image_ssl.py", ["throughput", "--profile", "OUT"], "--profile"),
    ("benchmarks/accuracy/image_ssl.py", ["variants", "--epochs", "0"], "--epochs"),
    ("benchmarks/accuracy/image_ssl.py", ["variants", "--dataset", "nope"], "--dataset"),
    ("benchmarks/accuracy/image_ssl.py", ["variants", "--dataset", "folder"], "--data-root"),
    ("benchmarks/accuracy/image_ssl.py", ["variants", "--extra", "--subset", "1"], "--subset"),
    (
        "benchmarks/accuracy/image_ssl.py",
        ["variants", "--extra", "--temperature", "0"],
        "--temperature",
    ),
    ("benchmarks/speed/loss_kernels.py", ["nope"], "'nope'"),
    ("benchmarks/speed/infonce_scale.py", ["infonce", "--sizes", "64", "1"], "--sizes"),
    ("benchmarks/speed/knn_build.py", ["--k", "0"], "--k"),
    ("benchmarks/speed/knn_build.py", ["--sizes", "8", "--k", "8"], "--k"),
    ("benchmarks/speed/knn_build.py", ["--device", "gpu0"], "--device"),
    ("benchmarks/speed/knn_build.py", ["--precisions", "fp8"], "--precisions"),
    ("benchmarks/speed/knn_build.py", ["--tile-size", "0"], "--tile-size"),
    ("benchmarks/speed/fullgraph_step.py", ["--device", "gpu0"], "--device"),
    ("benchmarks/speed/loss_kernels.py", ["gemm", "--save", "../results"], "--save"),
    ("benchmarks/speed/loss_kernels.py", ["gemm", "--tile", "0"], "--tile"),
    ("benchmarks/speed/loss_kernels.py", ["saved", "--tau", "0"], "--tau"),
    ("benchmarks/speed/loss_kernels.py", ["keys", "--n", "64", "--keys", "8", "64"], "--keys"),
    (
        "benchmarks/speed/loss_kernels.py",
        ["keys", "--n", "65", "--keys", "64"],
        "--keys",
    ),  # 64 rows
    ("benchmarks/speed/loss_kernels.py", ["spectral", "--n", "1"], "--n"),
    ("benchmarks/speed/infonce_scale.py", ["scale", "--impls", "cuda"], "--impls"),
    (
        "benchmarks/speed/infonce_scale.py",
        ["scale", "--impls", "triton", "--device", "cpu"],
        "--impls",
    ),
    ("benchmarks/speed/fullgraph_step.py", ["--json", "OUT"], "--json"),
    ("benchmarks/speed/distributed.py", ["--procs", "0"], "--procs"),
    ("benchmarks/speed/distributed.py", ["--views", "0"], "--views"),
    ("benchmarks/speed/distributed.py", ["--views", "100", "--procs", "3"], "--views"),
    ("benchmarks/speed/distributed.py", ["--methods", "nope"], "--methods"),
    ("benchmarks/speed/distributed.py", ["--name", "../x"], "--name"),
    ("benchmarks/studies/node_sweep.py", [], "configs"),
    ("benchmarks/studies/node_sweep.py", ["OUT/missing.json"], "missing.json"),
    ("benchmarks/studies/node_sweep.py", ["OUT/file.txt"], "file.txt: not JSON"),
    ("benchmarks/studies/node_sweep.py", ["CONFIGS", "--seeds", "0"], "--seeds"),
    ("benchmarks/studies/node_sweep.py", ["CONFIGS", "--dataset", "nope"], "--dataset"),
    ("benchmarks/studies/node_sweep.py", ["CONFIGS", "--dataset", "OUT/missing.npz"], "--dataset"),
    ("benchmarks/studies/node_sweep.py", ["CONFIGS", "--out", "OUT"], "--out"),
    ("benchmarks/studies/node_epochs.py", [], "--report"),  # neither configs nor --report
    ("benchmarks/studies/node_epochs.py", ["CONFIGS", "--report", "OUT/file.txt"], "--report"),
    ("benchmarks/studies/node_epochs.py", ["--report", "OUT/missing.jsonl"], "--report"),
    ("benchmarks/studies/node_epochs.py", ["CONFIGS", "--every", "0"], "--every"),
    ("benchmarks/studies/node_epochs.py", ["CONFIGS", "--seeds", "-1"], "--seeds"),
    ("benchmarks/studies/node_epochs.py", ["CONFIGS", "--dataset", "cora2"], "--dataset"),
    ("benchmarks/studies/node_epochs.py", ["CONFIGS", "--out", "OUT/file.txt/x.jsonl"], "--out"),
    ("benchmarks/studies/node_readout.py", ["--methods", "nope"], "--methods"),
    ("benchmarks/studies/node_readout.py", ["--seeds", "0"], "--seeds"),
    ("benchmarks/studies/node_readout.py", ["--hops", "1", "0"], "--hops"),
    ("benchmarks/studies/node_readout.py", ["--dataset", "nope"], "--dataset"),
    ("benchmarks/decisions/node_transfer.py", ["--methods", "nope"], "--methods"),
    ("benchmarks/decisions/node_transfer.py", ["--seeds", "0"], "--seeds"),
    ("benchmarks/decisions/node_transfer.py", ["--homophily", "0.5", "1.5"], "--homophily"),
    ("benchmarks/decisions/node_transfer.py", ["--plot", "OUT/plot.txt"], "--plot"),
    ("benchmarks/decisions/node_transfer.py", ["--plot", "OUT/file.txt/p.png"], "--plot"),
    ("benchmarks/decisions/node_transfer.py", ["--out", "OUT"], "--out"),
    ("benchmarks/decisions/node_transfer.py", ["--report", "OUT/missing.jsonl"], "--report"),
]
# a configuration list's entries, checked while parsing: (file content, what the line names);
# the fields' own checks are cl2gnn.node.config.check_field's (tested with NodeConfig): here
# one bad value of each kind, named with its file and entry
CONFIG_ERRORS = [
    (
        '[{"method": "grace", "out_channels": 0}]',
        "entry 1: NodeConfig.out_channels must be an integer in [1, 16384], got 0",
    ),
    (
        '[{"method": "grace"}, {"method": "nope"}]',
        f"entry 2: method must be one of {', '.join(METHODS)},",
    ),
    ('[{"method": "grace"}, {"out_channels": 8}]', "entry 2: method must be one of"),
    ('[{"method": "grace", "hiden": 256}]', "entry 1: NodeConfig has no field 'hiden'"),
    (
        '[{"method": "grace", "drop_edge": [0.2, 1.5]}]',
        "entry 1: NodeConfig.drop_edge must be a probability in [0, 1] or two of them",
    ),
    (
        '[{"method": "grace", "temperature": "0.5"}]',
        "entry 1: NodeConfig.temperature must be a number in (0, 100], got '0.5'",
    ),
    ('[{"method": "grace", "encoder": "gin"}]', "entry 1: NodeConfig.encoder must be one of"),
    (
        '[{"method": "grace", "normalize_features": 1}]',
        "entry 1: NodeConfig.normalize_features must be true or false",
    ),
    (
        '[{"method": "grace", "num_neighbors": [10, 0]}]',
        "entry 1: NodeConfig.num_neighbors must be a list of integers in [1, 2147483647] or -1",
    ),
    (  # the fields together: one fan-out per layer
        '[{"method": "grace", "layers": 2, "num_neighbors": [10, 10, 10]}]',
        "entry 1: NodeConfig.num_neighbors needs one fan-out per layer (2)",
    ),
    ('{"method": "grace"}', "must hold a non-empty JSON list"),
    ("[]", "must hold a non-empty JSON list"),
    ('[{"method": "grace",', "not JSON"),
]
# refused after parsing, by torch (imported for the question): no CUDA, or too few devices
DEVICE_ERRORS = [
    ("cl2gnn simclr", ["--device", "cuda:99", *TINY]),
    ("cl2gnn simsiam", ["--device", "cuda:99", *TINY]),
    (
        "benchmarks/accuracy/image_ssl.py",
        ["throughput", "--arch", "convnet", "--device", "cuda:99"],
    ),
    ("benchmarks/accuracy/image_ssl.py", ["variants", "--extra", "--device", "cuda:99"]),
    (
        "benchmarks/speed/infonce_scale.py",
        ["scale", "--impls", "tiled", "--sizes", "2", "--device", "cuda:99"],
    ),
    ("benchmarks/speed/knn_build.py", ["--sizes", "20", "--k", "2", "--device", "cuda:99"]),
    ("benchmarks/speed/fullgraph_step.py", ["--nodes", "20", "--device", "cuda:99"]),
]
if not torch.cuda.is_available():
    DEVICE_ERRORS += [
        ("cl2gnn simclr", ["--device", "cuda", *TINY]),
        ("benchmarks/speed/distributed.py", ["--device", "cuda", "--procs", "1", "--views", "2"]),
    ]


def case_id(script, args, *_):
    return " ".join([Path(script).name if script.endswith(".py") else script, *args])


def concrete(args, out):
    """``args`` with OUT and CONFIGS filled in."""
    return [arg.replace("OUT", str(out)).replace("CONFIGS", CONFIGS) for arg in args]


def prog_of(script, args):
    """The ``prog`` argparse names: the script, and the subcommand where it has them."""
    if not script.endswith(".py"):  # a command of cl2gnn's
        return script
    name = Path(script).name
    subcommands = name in ("image_ssl.py", "infonce_scale.py", "loss_kernels.py")
    subcommands = subcommands and args[0] != "nope"
    return f"{name} {args[0]}" if subcommands else name


@pytest.fixture
def out(tmp_path, monkeypatch):
    """tmp_path as the working folder, with OUT/file.txt the user's; a run that gets past
    the checks fails the test instead of training, and a results table would land in
    tmp_path, not the repository."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "file.txt").write_text("the user's")
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # adversarial.py's `import _adversarial`
    from benchmarks._shared import results as _results

    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path / "results")

    def started(*args, **kwargs):
        raise AssertionError("the run started: the arguments were accepted")

    monkeypatch.setattr("cl2gnn.apps.pretrain._run", started)
    monkeypatch.setattr("cl2gnn.node.load_node_dataset", started)  # every node script's first
    return folder


def run_script(script, args, monkeypatch):
    """``python script args`` or ``cl2gnn command args``, in this process (the script's or
    the package's __main__): its exit status."""
    if script.endswith(".py"):
        monkeypatch.setattr(sys, "argv", [str(ROOT / script), *args])
    else:
        monkeypatch.setattr(sys, "argv", [*script.split(), *args])
    with pytest.raises(SystemExit) as exit_info:
        if script.endswith(".py"):
            runpy.run_path(str(ROOT / script), run_name="__main__")
        else:
            runpy.run_module("cl2gnn", run_name="__main__")
    return exit_info.value.code


def assert_one_line_naming(code, stderr, prog, named):
    lines = stderr.splitlines()
    assert code == 2, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"{prog}: error: ") and named in lines[0], lines[0]
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("script", "args", "named"), [pytest.param(*c, id=case_id(*c)) for c in ARGUMENT_ERRORS]
)
def test_argument_error_is_one_line_exit_2_nothing_written(
    out, capsys, monkeypatch, script, args, named
):
    args = concrete(args, out)
    code = run_script(script, args, monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, prog_of(script, args), named)
    assert sorted(p.name for p in out.parent.rglob("*")) == ["file.txt", "out"]


BENCHMARKS = sorted(
    str(p.relative_to(ROOT))
    for p in (ROOT / "benchmarks").rglob("[!_]*.py")
    if "_shared" not in p.parts
)


@pytest.mark.parametrize("script", BENCHMARKS)
def test_every_benchmark_refuses_an_unknown_option_in_one_line(out, capsys, monkeypatch, script):
    """Each script's parser fails like a tool (none is argparse's own, whose error prints
    the usage block too), before any work."""
    code = run_script(script, ["--no-such-option"], monkeypatch)
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{Path(script).name}: error: "), lines[0]
    assert sorted(p.name for p in out.parent.rglob("*")) == ["file.txt", "out"]


def test_adversarial_refuses_a_word_naming_no_category(out, capsys, monkeypatch):
    """A word that selects no category is an error, not an empty run."""
    code = run_script("benchmarks/adversarial.py", ["checkpoints", "nosuchcategory"], monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, "adversarial.py", "nosuchcategory")


@pytest.mark.parametrize(
    "script", ["benchmarks/studies/node_sweep.py", "benchmarks/studies/node_epochs.py"]
)
@pytest.mark.parametrize(("content", "named"), CONFIG_ERRORS, ids=[c for c, _ in CONFIG_ERRORS])
def test_configuration_list_checked_entry_by_entry(
    out, capsys, monkeypatch, script, content, named
):
    """Before the first training: a bad tenth entry must not wait for nine runs."""
    configs = out / "configs.json"
    configs.write_text(content)
    code = run_script(script, [str(configs)], monkeypatch)
    err = capsys.readouterr().err
    assert_one_line_naming(code, err, Path(script).name, f"argument configs: {configs}: {named}")
    assert sorted(p.name for p in out.parent.rglob("*")) == ["configs.json", "file.txt", "out"]


@pytest.mark.parametrize(
    "script", ["benchmarks/studies/node_epochs.py", "benchmarks/decisions/node_transfer.py"]
)
@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("the user's\n", "line 1 is not JSON"),
        ('{"dataset": "x"}\n', "line 1 has no "),
        ("", "no records"),
    ],
    ids=["not JSON", "not a record", "empty"],
)
def test_report_of_a_file_it_did_not_write_names_the_file(
    out, capsys, monkeypatch, script, content, named
):
    report = out / "results.jsonl"
    report.write_text(content)
    args = ["--report", str(report)]
    if script.endswith("node_transfer.py"):
        args += ["--plot", str(out / "plot.png")]
    code = run_script(script, args, monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, Path(script).name, f"{report}: {named}")
    assert sorted(p.name for p in out.iterdir()) == ["file.txt", "results.jsonl"]


def test_dataset_without_a_public_split_refused_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    monkeypatch.setattr("cl2gnn.apps.node.run_node", lambda *a, **k: pytest.fail("trained"))
    args = [CONFIGS, "--dataset", "digits-knn", "--out", str(tmp_path / "runs" / "r.jsonl")]
    code = run_script("benchmarks/studies/node_sweep.py", args, monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, "node_sweep.py", "no public split")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("script", "args"), [pytest.param(*c, id=case_id(*c)) for c in DEVICE_ERRORS]
)
def test_unusable_device_refused_before_any_work(out, capsys, monkeypatch, script, args):
    code = run_script(script, args, monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, prog_of(script, args), "--device")
    assert sorted(p.name for p in out.parent.rglob("*")) == ["file.txt", "out"]


def test_argument_errors_import_no_heavy_module(tmp_path):
    """What keeps them fast: torch alone takes seconds to import. The heavy modules are
    blocked in a fresh interpreter, so that a case whose check is missing fails at its
    first heavy import (naming the case) instead of starting a run."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "file.txt").write_text("the user's")

    def path(script):
        return str(ROOT / script) if script.endswith(".py") else script

    cases = [
        (path(script), concrete(args, tmp_path / "out")) for script, args, _ in ARGUMENT_ERRORS
    ]
    configs = tmp_path / "configs.json"
    configs.write_text(CONFIG_ERRORS[0][0])
    cases += [(str(ROOT / "benchmarks/studies/node_sweep.py"), [str(configs)])]
    cases += [(path(script), ["--help"]) for script in {c[0] for c in ARGUMENT_ERRORS}]
    code = (
        "import runpy, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        f"sys.modules.update(dict.fromkeys({HEAVY_MODULES!r}))  # import raises ImportError\n"
        "imported = []\n"
        f"for script, args in {cases!r}:\n"
        "    sys.argv = [script, *args] if script.endswith('.py') else [*script.split(), *args]\n"
        "    try:\n"
        "        if script.endswith('.py'):\n"
        "            runpy.run_path(script, run_name='__main__')\n"
        "        else:\n"
        "            runpy.run_module('cl2gnn', run_name='__main__')\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    except ImportError as error:\n"
        "        imported.append(f'{script} {args}: {error}')\n"
        "print(imported)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"


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
    return vars(importlib.import_module(f"cl2gnn.apps.{name}"))


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


def test_merge_with_an_unreadable_results_file_fails_before_measuring(out, capsys, monkeypatch):
    results = out.parent / "results"
    results.mkdir()
    (results / "distributed_infonce.json").write_text('{"rows": [[8192, 1, "ring"')
    args = ["--merge", "--procs", "1", "--views", "2", "--repeats", "1"]
    code = run_script("benchmarks/speed/distributed.py", args, monkeypatch)
    err = capsys.readouterr().err
    assert_one_line_naming(code, err, "distributed.py", "distributed_infonce.json")
    assert "cannot merge" in err


def test_node_benchmark_entries_are_checked_by_the_library(monkeypatch):
    """A configuration list's fields go through ``check_field``: every field of
    ``NodeConfig`` is accepted at its default (as JSON holds it), a bad one is refused with
    the library's own message."""
    import argparse

    from benchmarks._shared import node_args as _node_args
    from cl2gnn.node import NodeConfig
    from cl2gnn.node.config import check_field

    _node_args.check_entry(json.loads(json.dumps({"method": "grace", **NodeConfig().as_dict()})))
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        _node_args.check_entry({"method": "grace", "layers": 0})
    with pytest.raises(ValueError) as expected:
        check_field("layers", 0)
    assert str(refused.value) == str(expected.value)


TRANSFER_ROWS = [
    {
        "dataset": f"csbm-h{h}",
        "nodes": 2000,
        "embedding": name,
        "accuracy_mean": a,
        "accuracy_std": 1,
    }
    for h in (0.9, 0.3)
    for name, a in (("raw features", 50), ("grace", 70))
]


@pytest.mark.parametrize("fails", [False, True], ids=["whole", "write fails"])
def test_transfer_plot_appears_only_whole(out, capsys, monkeypatch, fails):
    import matplotlib.figure

    report = out / "results.jsonl"
    report.write_text("".join(json.dumps(row) + "\n" for row in TRANSFER_ROWS))
    if fails:
        savefig = matplotlib.figure.Figure.savefig

        def disk_full(self, path, **kwargs):
            savefig(self, path, **kwargs)
            Path(path).write_bytes(Path(path).read_bytes()[:100])
            raise OSError(28, "No space left on device", str(path))

        monkeypatch.setattr(matplotlib.figure.Figure, "savefig", disk_full)
    plot = out / "plot.png"
    args = ["--report", str(report), "--plot", str(plot)]
    if fails:
        code = run_script("benchmarks/decisions/node_transfer.py", args, monkeypatch)
        assert_one_line_naming(code, capsys.readouterr().err, "node_transfer.py", "No space left")
        assert sorted(p.name for p in out.iterdir()) == ["file.txt", "results.jsonl"]
    else:
        monkeypatch.setattr(sys, "argv", ["node_transfer.py", *args])
        runpy.run_path(str(ROOT / "benchmarks/decisions/node_transfer.py"), run_name="__main__")
        assert "| csbm-h0.9 | 2000 | 50.00 ± 1.00 | 70.00 ± 1.00 |" in capsys.readouterr().out
        assert sorted(p.name for p in out.iterdir()) == ["file.txt", "plot.png", "results.jsonl"]
        assert plot.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("args", [["--only", "nope"], ["--only", "dgi", "--table"]])
def test_node_select_refuses_only_in_one_line_writing_nothing(out, capsys, monkeypatch, args):
    """(node_select imports torch at the top, so it is not among ARGUMENT_ERRORS, whose
    scripts must refuse their arguments before any heavy import.)"""
    candidates = str(ROOT / "benchmarks/configs/default_candidates.json")
    monkeypatch.chdir(out.parent)
    code = run_script("benchmarks/decisions/node_select.py", [candidates, *args], monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, "node_select.py", "--only")
    assert sorted(p.name for p in out.parent.rglob("*")) == ["file.txt", "out"]
