"""The benchmark scripts fail like tools on bad input: ``prog: error: ...`` on one stderr
line naming the option, exit status 2, no traceback, nothing written — argument errors
before any heavy module is imported — and write their outputs only whole."""

import json
import runpy
import sys
from pathlib import Path

import pytest
import torch

from cl2gnn.cli import cmdline
from cl2gnn.node.methods import METHODS

from .._tool_errors import assert_one_line_naming, heavy_imports, run_in_process
from ._scripts import COMMANDS, ROOT, load, path

# (script, arguments, what the message must name); OUT stands for tmp_path/out, which holds
# the user's file.txt, CONFIGS for a shipped configuration list
ARGUMENT_ERRORS = [
    ("image_ssl", ["nope"], "'nope'"),
    ("image_ssl", ["throughput", "--steps", "0"], "--steps"),
    ("image_ssl", ["throughput", "--batch-size", "1"], "--batch-size"),
    ("image_ssl", ["throughput", "--arch", "vit"], "--arch"),
    ("image_ssl", ["throughput", "--json", "OUT"], "--json"),
    ("image_ssl", ["throughput", "--profile", "OUT"], "--profile"),
    ("image_ssl", ["variants", "--epochs", "0"], "--epochs"),
    ("image_ssl", ["variants", "--dataset", "nope"], "--dataset"),
    ("image_ssl", ["variants", "--dataset", "folder"], "--data-root"),
    ("image_ssl", ["variants", "--extra", "--subset", "1"], "--subset"),
    ("image_ssl", ["variants", "--extra", "--temperature", "0"], "--temperature"),
    ("loss_kernels", ["nope"], "'nope'"),
    ("infonce_scale", ["infonce", "--sizes", "64", "1"], "--sizes"),
    ("knn_build", ["--k", "0"], "--k"),
    ("knn_build", ["--sizes", "8", "--k", "8"], "--k"),
    ("knn_build", ["--device", "gpu0"], "--device"),
    ("knn_build", ["--precisions", "fp8"], "--precisions"),
    ("knn_build", ["--tile-size", "0"], "--tile-size"),
    ("fullgraph_step", ["--device", "gpu0"], "--device"),
    ("loss_kernels", ["gemm", "--save", "../results"], "--save"),
    ("loss_kernels", ["gemm", "--tile", "0"], "--tile"),
    ("loss_kernels", ["saved", "--tau", "0"], "--tau"),
    ("loss_kernels", ["keys", "--n", "64", "--keys", "8", "64"], "--keys"),
    ("loss_kernels", ["keys", "--n", "65", "--keys", "64"], "--keys"),  # 64 rows
    ("loss_kernels", ["spectral", "--n", "1"], "--n"),
    ("infonce_scale", ["scale", "--impls", "cuda"], "--impls"),
    ("infonce_scale", ["scale", "--impls", "triton", "--device", "cpu"], "--impls"),
    ("fullgraph_step", ["--json", "OUT"], "--json"),
    ("distributed", ["--procs", "0"], "--procs"),
    ("distributed", ["--views", "0"], "--views"),
    ("distributed", ["--views", "100", "--procs", "3"], "--views"),
    ("distributed", ["--methods", "nope"], "--methods"),
    ("distributed", ["--name", "../x"], "--name"),
    ("node_sweep", [], "configs"),
    ("node_sweep", ["OUT/missing.json"], "missing.json"),
    ("node_sweep", ["OUT/file.txt"], "file.txt: not JSON"),
    ("node_sweep", ["CONFIGS", "--seeds", "0"], "--seeds"),
    ("node_sweep", ["CONFIGS", "--dataset", "nope"], "--dataset"),
    ("node_sweep", ["CONFIGS", "--dataset", "OUT/missing.npz"], "--dataset"),
    ("node_sweep", ["CONFIGS", "--out", "OUT"], "--out"),
    ("node_epochs", [], "--report"),  # neither configs nor --report
    ("node_epochs", ["CONFIGS", "--report", "OUT/file.txt"], "--report"),
    ("node_epochs", ["--report", "OUT/missing.jsonl"], "--report"),
    ("node_epochs", ["CONFIGS", "--every", "0"], "--every"),
    ("node_epochs", ["CONFIGS", "--seeds", "-1"], "--seeds"),
    ("node_epochs", ["CONFIGS", "--dataset", "cora2"], "--dataset"),
    ("node_epochs", ["CONFIGS", "--out", "OUT/file.txt/x.jsonl"], "--out"),
    ("node_readout", ["--methods", "nope"], "--methods"),
    ("node_readout", ["--seeds", "0"], "--seeds"),
    ("node_readout", ["--hops", "1", "0"], "--hops"),
    ("node_readout", ["--dataset", "nope"], "--dataset"),
    ("node_transfer", ["--methods", "nope"], "--methods"),
    ("node_transfer", ["--seeds", "0"], "--seeds"),
    ("node_transfer", ["--homophily", "0.5", "1.5"], "--homophily"),
    ("node_transfer", ["--plot", "OUT/plot.txt"], "--plot"),
    ("node_transfer", ["--plot", "OUT/file.txt/p.png"], "--plot"),
    ("node_transfer", ["--out", "OUT"], "--out"),
    ("node_transfer", ["--report", "OUT/missing.jsonl"], "--report"),
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
        "entry 1: NodeConfig.drop_edge must be a number in [0, 1] or two of them",
    ),
    (
        '[{"method": "grace", "temperature": "0.5"}]',
        "entry 1: NodeConfig.temperature must be a number in [0.0001, 100] (a smaller one "
        "overflows the logits, a larger one makes the loss a constant), got '0.5'",
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
    ("image_ssl", ["throughput", "--arch", "convnet", "--device", "cuda:99"]),
    ("image_ssl", ["variants", "--extra", "--device", "cuda:99"]),
    ("infonce_scale", ["scale", "--impls", "tiled", "--sizes", "2", "--device", "cuda:99"]),
    ("knn_build", ["--sizes", "20", "--k", "2", "--device", "cuda:99"]),
    ("fullgraph_step", ["--nodes", "20", "--device", "cuda:99"]),
]
if not torch.cuda.is_available():
    DEVICE_ERRORS += [("distributed", ["--device", "cuda", "--procs", "1", "--views", "2"])]
# the scripts whose parser has subcommands: argparse names "<script>.py <subcommand>"
SUBCOMMANDS = ("image_ssl", "infonce_scale", "loss_kernels")


def case_id(script, args, *_):
    return " ".join([f"{script}.py", *args])


def concrete(args, out):
    """``args`` with OUT and CONFIGS filled in."""
    configs = str(path("cora_public"))
    return [arg.replace("OUT", str(out)).replace("CONFIGS", configs) for arg in args]


def prog_of(script, args):
    """The ``prog`` argparse names: the script, and the subcommand where it has them."""
    subcommands = script in SUBCOMMANDS and args[0] != "nope"
    return f"{script}.py {args[0]}" if subcommands else f"{script}.py"


def run_script(script, args, monkeypatch):
    """``python <script's path> args`` in this process: its exit status."""
    return run_in_process(path(script), args, monkeypatch)


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
    monkeypatch.setattr(load("_results"), "RESULTS_DIR", tmp_path / "results")

    def started(*args, **kwargs):
        raise AssertionError("the run started: the arguments were accepted")

    monkeypatch.setattr("cl2gnn.cli.pretrain._run", started)
    monkeypatch.setattr("cl2gnn.node.load_node_dataset", started)  # every node script's first
    return folder


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


@pytest.mark.parametrize("name", COMMANDS)
def test_every_benchmark_refuses_an_unknown_option_in_one_line(out, capsys, monkeypatch, name):
    """Each script's parser fails like a tool (none is argparse's own, whose error prints
    the usage block too), before any work."""
    code = run_script(name, ["--no-such-option"], monkeypatch)
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{name}.py: error: "), lines[0]
    assert sorted(p.name for p in out.parent.rglob("*")) == ["file.txt", "out"]


@pytest.mark.parametrize("script", ["node_sweep", "node_epochs"])
@pytest.mark.parametrize(("content", "named"), CONFIG_ERRORS, ids=[c for c, _ in CONFIG_ERRORS])
def test_configuration_list_checked_entry_by_entry(
    out, capsys, monkeypatch, script, content, named
):
    """Before the first training: a bad tenth entry must not wait for nine runs."""
    configs = out / "configs.json"
    configs.write_text(content)
    code = run_script(script, [str(configs)], monkeypatch)
    err = capsys.readouterr().err
    assert_one_line_naming(code, err, f"{script}.py", f"argument configs: {configs}: {named}")
    assert sorted(p.name for p in out.parent.rglob("*")) == ["configs.json", "file.txt", "out"]


@pytest.mark.parametrize("script", ["node_epochs", "node_transfer"])
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
    if script == "node_transfer":
        args += ["--plot", str(out / "plot.png")]
    code = run_script(script, args, monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, f"{script}.py", f"{report}: {named}")
    assert sorted(p.name for p in out.iterdir()) == ["file.txt", "results.jsonl"]


def test_dataset_without_a_public_split_refused_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    monkeypatch.setattr(
        "cl2gnn.node.evaluation.experiment.run_experiment", lambda *a, **k: pytest.fail("trained")
    )
    runs = str(tmp_path / "runs" / "r.jsonl")
    args = [str(path("cora_public")), "--dataset", "digits-knn", "--out", runs]
    code = run_script("node_sweep", args, monkeypatch)
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
    """What keeps them fast: torch alone takes seconds to import. The scripts' helpers are
    resolved as the tests resolve them (tests/benchmarks/_scripts.py, loaded by its path)."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "file.txt").write_text("the user's")
    cases = [
        (path(script), concrete(args, tmp_path / "out"))
        for script, args, _ in ARGUMENT_ERRORS
        if "--methods" not in args  # a method's name is the registry's (torch): after parsing
    ]
    configs = tmp_path / "configs.json"
    configs.write_text(CONFIG_ERRORS[0][0])
    cases += [(path("node_sweep"), [str(configs)])]
    cases += [(path(script), ["--help"]) for script in sorted({c[0] for c in ARGUMENT_ERRORS})]
    helper = Path(__file__).with_name("_scripts.py")
    prelude = (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('_scripts', {str(helper)!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))"
    )
    assert heavy_imports(cases, tmp_path, prelude, root=ROOT) == []


def test_merge_with_an_unreadable_results_file_fails_before_measuring(out, capsys, monkeypatch):
    results = out.parent / "results"
    results.mkdir()
    (results / "distributed_infonce.json").write_text('{"rows": [[8192, 1, "ring"')
    args = ["--merge", "--procs", "1", "--views", "2", "--repeats", "1"]
    code = run_script("distributed", args, monkeypatch)
    err = capsys.readouterr().err
    assert_one_line_naming(code, err, "distributed.py", "distributed_infonce.json")
    assert "cannot merge" in err


def test_node_benchmark_entries_are_checked_by_the_library(monkeypatch):
    """A configuration list's fields go through ``check_field``: every field of
    ``NodeConfig`` is accepted at its default (as JSON holds it), a bad one is refused with
    the library's own message."""
    import argparse

    from cl2gnn.node import NodeConfig
    from cl2gnn.node.config import check_field

    _node_args = load("_node_args")

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
        code = run_script("node_transfer", args, monkeypatch)
        assert_one_line_naming(code, capsys.readouterr().err, "node_transfer.py", "No space left")
        assert sorted(p.name for p in out.iterdir()) == ["file.txt", "results.jsonl"]
    else:
        monkeypatch.setattr(sys, "argv", ["node_transfer.py", *args])
        runpy.run_path(str(path("node_transfer")), run_name="__main__")
        assert "| csbm-h0.9 | 2000 | 50.00 ± 1.00 | 70.00 ± 1.00 |" in capsys.readouterr().out
        assert sorted(p.name for p in out.iterdir()) == ["file.txt", "plot.png", "results.jsonl"]
        assert plot.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("args", [["--only", "nope"], ["--only", "dgi", "--table"]])
def test_node_select_refuses_only_in_one_line_writing_nothing(out, capsys, monkeypatch, args):
    """(node_select imports torch at the top, so it is not among ARGUMENT_ERRORS, whose
    scripts must refuse their arguments before any heavy import.)"""
    candidates = str(path("default_candidates"))
    monkeypatch.chdir(out.parent)
    code = run_script("node_select", [candidates, *args], monkeypatch)
    assert_one_line_naming(code, capsys.readouterr().err, "node_select.py", "--only")
    assert sorted(p.name for p in out.parent.rglob("*")) == ["file.txt", "out"]
