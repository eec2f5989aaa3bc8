"""The checks the benchmarks apply to what they time: a check that cannot fail would let a
fast but wrong build into the results page."""

import json
import sys

import torch

from benchmarks._shared import results as _results
from benchmarks.speed import fullgraph_step, knn_build
from cl2gnn.graphs import _faiss, knn_graph


def test_knn_exactness_accepts_the_exact_graph_and_flags_a_wrong_neighbor():
    x = knn_build.clustered_points(600, 8)
    graph = knn_graph(x, 5, "l2", backend="torch")
    assert knn_build.knn_exactness(x, graph, 5, 600) == {"exact_rows": 1.0, "max_kth_excess": 0.0}
    wrong = graph.clone()
    wrong[0, 5 * 7 + 2] = int(torch.cdist(x[7:8], x).argmax())  # row 7's farthest point
    check = knn_build.knn_exactness(x, wrong, 5, 600)
    assert check["exact_rows"] == 1 - 1 / 600
    assert check["max_kth_excess"] > 1.0


def test_knn_exactness_in_chunks_flags_exactly_the_wrong_row():
    """Rows are checked in chunks of 2**26 // N (here 5 chunks): one wrong row among
    16,387, whichever chunk it falls in, and no other."""
    x = knn_build.clustered_points(2**14 + 3, 4)
    graph = knn_graph(x, 3, "l2", backend="torch")
    graph[0, 3 * 9000 : 3 * 9001] = graph[0, :3]  # row 9,000 takes row 0's neighbors
    check = knn_build.knn_exactness(x, graph, 3, x.size(0))
    assert check["exact_rows"] == 1 - 1 / x.size(0)
    assert check["max_kth_excess"] > 0


def test_saved_operator_table_is_the_printed_one(tmp_path, monkeypatch, capsys):
    """``--save NAME``: the results page's table holds the printed table's columns and cells,
    under the benchmark's topic, with the command that printed it."""

    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path)
    argv = ["benchmarks/speed/fullgraph_step.py", "--nodes", "40", "--dim", "8"]
    monkeypatch.setattr(sys, "argv", [*argv, "--save", "fullgraph_tiny"])
    fullgraph_step.main()
    printed = capsys.readouterr().out.splitlines()
    saved = json.loads((tmp_path / "fullgraph_tiny.json").read_text())
    assert saved["topic"] == "Scale" and saved["title"] == "Full-graph GRACE step on a large graph"
    assert saved["command"].startswith("python -m benchmarks.speed.fullgraph_step --nodes 40")
    assert printed[0] == "| " + " | ".join(saved["columns"]) + " |"
    assert printed[2] == "| " + " | ".join(saved["rows"][0]) + " |"
    assert dict(zip(saved["columns"], saved["rows"][0], strict=True))["nodes"] == "40"


def test_knn_build_checks_each_precision_and_names_the_default():
    """The benchmark's rows: each tile precision checked against float64 brute force, the
    reduced one with its share of rows searched again, and the default's choice named."""
    rows = knn_build.run_knn([300], 8, 5, "cpu", 300, 0, ["full", "bf16"], 64)
    full, bf16, default = rows[:3]
    assert full["exact_rows"] == bf16["exact_rows"] == default["exact_rows"] == 1.0
    assert "rechecked_rows" not in full and 0 <= bf16["rechecked_rows"] <= 1
    choice = "faiss" if _faiss.faiss_available() else "torch full"
    assert default["method"].startswith(f"cl2gnn knn_graph default: {choice} ")
    assert rows[3]["skipped"] == "N > --peers-max 0"


def test_polygcl_stops_as_its_authors_code_and_restores_the_lowest_loss():
    """Their rule: stop after ``patience`` epochs without a strictly lower loss, restore the
    lowest-loss state (a tie is no improvement)."""
    import torch

    from benchmarks.reproduce.polygcl import train_until_the_loss_stops

    class Scripted:
        def __init__(self, losses):
            self.losses, self.model = iter(losses), torch.nn.Linear(1, 1, bias=False)
            torch.nn.init.zeros_(self.model.weight)
            self.config = type("Config", (), {"epochs": 100})()

        def epoch(self):
            with torch.no_grad():
                self.model.weight += 1  # the state after epoch k is k
            return torch.tensor(next(self.losses))

    trainer = Scripted([3.0, 2.0, 2.5, 1.0, 1.0, 1.5, 1.2, 1.1, 0.9])
    assert train_until_the_loss_stops(trainer, patience=3) == (7, 4, 1.0)
    assert float(trainer.model.weight) == 4.0
    short = Scripted([3.0, 2.0, 1.0])
    short.config.epochs = 3
    assert train_until_the_loss_stops(short, patience=3) == (3, 3, 1.0)
