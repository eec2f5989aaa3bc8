"""The ``cl2gnn node`` command's words: the flags that reproduce what method ``auto`` chose,
where a checkpoint goes, and the configuration a run started from."""

import json
import shlex

import pytest

from cl2gnn.cli.main import build_parser, main
from cl2gnn.cli.node_output import reproduce
from cl2gnn.node import default_config
from cl2gnn.node.evaluation.experiment import configure
from cl2gnn.node.presets import candidates

from ..datasets.test_node_data import graph_arrays, write


def configuration_of(command: str):
    """The configuration a ``cl2gnn node`` command line trains with (as the experiment
    makes it: the method's default for the graph, then --config / --set, then the flags)."""
    args = build_parser().parse_args(shlex.split(command)[1:])
    base = default_config(args.dataset, args.method, graph=args.dataset)
    return configure(base, dict(args.set or ()), epochs=args.epochs)


@pytest.mark.parametrize("graph", ["digits-knn", "Cora", "texas"])
def test_every_candidate_is_reproduced_by_the_flags_printed_for_it(graph):
    """For each of auto's candidates on a graph with a published configuration and on one
    without: the printed command, parsed by the command's own parser, trains that
    candidate's configuration field for field, options included."""
    for label, method, config in candidates(graph):
        chosen = {"dataset": graph, "method": method, "chosen_method": method}
        chosen |= {"config": config.as_dict(), "chosen_epoch": config.epochs}
        command = reproduce(graph, chosen)
        assert f"--method {method}" in command
        assert configuration_of(command) == config, (label, command)


def test_an_earlier_checkpoint_is_reproduced_by_select_epoch_and_epoch_0_by_no_training():
    config = candidates("texas")[0][2]
    chosen = {"dataset": "texas", "method": "cca_ssg", "config": config.as_dict()}
    assert reproduce("texas", {**chosen, "chosen_epoch": 6}).endswith("--select-epoch")
    assert "--epochs 0" in reproduce("texas", {**chosen, "chosen_epoch": 0})


def test_the_command_auto_prints_trains_what_auto_chose(tmp_path, capsys):
    """End to end: the reproduce line of an auto run, run as it is printed (one seed), gives
    the chosen configuration and the same score."""
    path = write(tmp_path / "g.npz", graph_arrays(n=60, splits=2))
    auto = tmp_path / "auto.json"
    options = ["--seeds", "1", "--epochs", "3", "--no-progress"]
    assert main(["node", "--dataset", path, *options, "--json", str(auto)]) == 0
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.startswith("reproduce: "))
    chosen = json.loads(auto.read_text())
    assert line.removeprefix("reproduce: ") == chosen["reproduce"]
    again = tmp_path / "again.json"
    command = shlex.split(chosen["reproduce"])[1:]
    assert main([*command, "--seeds", "1", "--no-progress", "--json", str(again)]) == 0
    repeated = json.loads(again.read_text())
    label = {"preset": None}
    if chosen["chosen_epoch"] == 0:  # the untrained encoder: reproduced by no training
        label["epochs"] = None
    assert repeated["config"] | label == chosen["config"] | label
    assert repeated["scores"] == chosen["scores"]


def test_the_help_names_where_the_periodic_checkpoints_are_written(capsys):
    with pytest.raises(SystemExit):
        main(["node", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "DIR/.cl2gnn.checkpoints/seed_<k>/checkpoint.pt every N epochs" in text
    assert "DIR/seed_<k>/checkpoint.pt every" not in text  # where they are not


def test_a_run_says_which_configuration_it_started_from(tmp_path, capsys):
    path = write(tmp_path / "g.npz", graph_arrays(n=40))
    out = tmp_path / "r.json"
    options = ["--seeds", "1", "--epochs", "1", "--no-progress", "--json", str(out)]
    assert main(["node", "--dataset", path, "--method", "grace", *options]) == 0
    printed = capsys.readouterr().out
    preset = json.loads(out.read_text())["preset"]
    assert "general default" in preset and f"configuration: {preset}" in printed


# a process that prints a marker when torch is first imported, then runs the command
TORCH_MARKER = """
import sys

class Marker:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            print("<torch imported>", flush=True)
            sys.meta_path.remove(self)

sys.meta_path.insert(0, Marker())
from cl2gnn.cli.main import run
sys.argv = ["cl2gnn", *sys.argv[1:]]
run()
"""


@pytest.mark.parametrize("arguments", [["--quick"], ["--method", "grace", "--seeds", "1"]])
def test_the_first_line_comes_before_torch_loads(arguments):
    """The README's first command talks at once: its first line is printed before torch is
    imported (seconds), the library's rules checked after it."""
    import os
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-c", TORCH_MARKER, "node", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        first = [process.stdout.readline().strip() for _ in range(2)]
    finally:
        process.kill()
        process.wait()
    assert first[0].startswith("cl2gnn node: digits-knn, "), first
    assert first[1] == "<torch imported>", first
