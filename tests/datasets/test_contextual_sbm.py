"""The contextual SBM generator: its graph statistics against the parameters asked for,
chunking, the .npz round trip through the node command's reader, and the command."""

from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, degree, homophily, to_undirected

from cl2gnn.cli import main as cli_main
from cl2gnn.cli.main import main
from cl2gnn.datasets import PRESETS, contextual_sbm, write_npz
from cl2gnn.datasets import generators as generator_module
from cl2gnn.datasets import npz as npz_module
from cl2gnn.datasets.npz import read_npz_graph

KEYS = ("x", "y", "edge_index", "train_mask", "val_mask", "test_mask")


def test_shapes_dtypes_and_split():
    n, e, f, c = 600, 2000, 8, 3
    data = contextual_sbm(n, e, f, c, seed=1)
    assert data.x.shape == (n, f) and data.x.dtype == torch.float32
    assert data.y.shape == (n,) and data.y.dtype == torch.long
    assert data.edge_index.shape == (2, 2 * e) and data.edge_index.dtype == torch.long
    assert int(data.edge_index.min()) >= 0 and int(data.edge_index.max()) < n
    assert torch.bincount(data.y).tolist() == [200, 200, 200]
    masks = torch.stack([data.train_mask, data.val_mask, data.test_mask])
    assert masks.dtype == torch.bool and masks.sum(1).tolist() == [60, 60, 480]
    assert masks.sum(0).eq(1).all()  # every node in exactly one set


def test_no_self_loops_and_both_directions():
    """Four nodes in two classes, all edges inside a class: a third of the draws are
    self-loops before they are redrawn."""
    e = 3000
    data = contextual_sbm(4, e, 2, 2, homophily=1.0, degree_spread=0.0, seed=0)
    source, target = data.edge_index
    assert not (source == target).any()
    assert torch.equal(data.edge_index[:, e:], data.edge_index[:, :e].flip(0))


@pytest.mark.parametrize("wanted", [0.0, 0.3, 0.65, 1.0])
def test_edge_homophily_is_the_one_asked_for(wanted):
    data = contextual_sbm(3000, 20_000, 2, 3, homophily=wanted, degree_spread=1.5, seed=2)
    assert abs(homophily(data.edge_index, data.y, method="edge") - wanted) < 0.015


def test_degree_spread_spreads_both_ends_of_the_edges():
    """Sources and targets are each drawn in proportion to the propensities: without
    spread their counts are Poisson-like (variance / mean about 1), with it overdispersed."""
    n, e = 4000, 40_000

    def dispersion(spread, end):
        data = contextual_sbm(n, e, 2, 4, degree_spread=spread, seed=3)
        counts = degree(data.edge_index[end, :e], n)
        return float(counts.var() / counts.mean())

    for end in (0, 1):
        assert dispersion(0.0, end) < 1.3
        assert dispersion(1.0, end) > 5.0


def test_features_carry_the_class():
    def probe_accuracy(signal):
        data = contextual_sbm(2000, 4000, 16, 4, feature_signal=signal, seed=4)
        train, test = data.train_mask, data.test_mask
        probe = LogisticRegression(max_iter=1000).fit(data.x[train], data.y[train])
        return probe.score(data.x[test], data.y[test])

    assert probe_accuracy(3.0) > 0.75
    assert probe_accuracy(0.0) < 0.35  # chance is 0.25


def test_reproducible_for_a_seed_different_for_another():
    first, again, other = (contextual_sbm(500, 3000, 4, 5, seed=s) for s in (7, 7, 8))
    assert all(torch.equal(first[k], again[k]) for k in KEYS)
    assert not torch.equal(first.x, other.x)
    assert not torch.equal(first.edge_index, other.edge_index)


def test_chunk_size_does_not_change_the_graph():
    """Three random streams of nodes and of edges, and hubs (spread 3) that draw
    self-loops to redraw: one stream per chunk gives the graph of one chunk."""
    args = (3 * generator_module.STREAM_ROWS, 3 * generator_module.STREAM_ROWS - 5, 3, 2)
    whole = contextual_sbm(*args, degree_spread=3.0, seed=5)
    chunked = contextual_sbm(*args, degree_spread=3.0, seed=5, chunk_size=1)
    assert all(torch.equal(whole[k], chunked[k]) for k in KEYS)


def test_npz_round_trip(tmp_path):
    data = contextual_sbm(300, 1500, 5, 3, seed=6)
    path = tmp_path / "graph.npz"
    write_npz(data, path)
    with np.load(path) as raw:
        assert raw["edges"].shape == (1500, 2) and raw["edges"].dtype == np.int32
    loaded = read_npz_graph(path)
    assert torch.equal(loaded.x, data.x) and torch.equal(loaded.y, data.y)
    assert torch.equal(loaded.edge_index, coalesce(data.edge_index, num_nodes=300))
    for key in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(loaded[key], data[key][:, None])


def test_npz_round_trip_of_any_undirected_graph(tmp_path):
    """Self-loops (stored once) and several splits ([N, S] masks) come through too."""
    n = 30
    edge_index = to_undirected(
        torch.cat([torch.randint(0, n, (2, 60)), torch.arange(3).repeat(2, 1)], 1)
    )
    split = torch.randint(0, 3, (n, 2))
    data = Data(
        x=torch.randn(n, 4, dtype=torch.float64),
        y=torch.arange(n) % 2,
        edge_index=edge_index,
        train_mask=split == 0,
        val_mask=split == 1,
        test_mask=split == 2,
    )
    write_npz(data, tmp_path / "g.npz", chunk_size=7)
    loaded = read_npz_graph(tmp_path / "g.npz")
    assert torch.equal(loaded.edge_index, edge_index)
    assert torch.equal(loaded.x, data.x.float())
    assert all(torch.equal(loaded[k], data[k]) for k in ("train_mask", "val_mask", "test_mask"))


def test_write_npz_refuses_a_directed_graph_and_writes_nothing(tmp_path):
    data = contextual_sbm(300, 1500, 5, 3, seed=6)
    data.edge_index = data.edge_index[:, :1500]
    with pytest.raises(ValueError, match="both directions"):
        write_npz(data, tmp_path / "graph.npz")
    assert list(tmp_path.iterdir()) == []


def test_write_npz_leaves_no_file_when_it_fails_midway(tmp_path, monkeypatch):
    write_array = npz_module._write_array

    def fail_on_labels(archive, name, array):
        if name == "node_labels":
            raise OSError("disk full")
        write_array(archive, name, array)

    monkeypatch.setattr(npz_module, "_write_array", fail_on_labels)
    with pytest.raises(OSError, match="disk full"):
        write_npz(contextual_sbm(300, 1500, 5, 3, seed=6), tmp_path / "graph.npz")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_classes": 1}, "num_classes"),
        ({"num_nodes": 7}, "num_nodes"),
        ({"num_edges": 0}, "num_edges"),
        ({"homophily": 1.5}, "homophily"),
        ({"degree_spread": -1.0}, "degree_spread"),
        ({"feature_signal": float("nan")}, "feature_signal"),
        ({"chunk_size": 0}, "chunk_size"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    args = {"num_nodes": 100, "num_edges": 300, "num_features": 4, "num_classes": 4} | kwargs
    with pytest.raises(ValueError, match=message):
        contextual_sbm(**args)


def test_command_writes_a_preset(tmp_path, monkeypatch, capsys):
    tiny = {
        "num_nodes": 200,
        "num_edges": 800,
        "num_features": 6,
        "num_classes": 4,
        "homophily": 0.5,
    }
    monkeypatch.setitem(PRESETS, "tiny", tiny)
    monkeypatch.setattr(cli_main, "GRAPH_PRESETS", (*cli_main.GRAPH_PRESETS, "tiny"))
    out = tmp_path / "tiny.npz"
    assert main(["generate", "--preset", "tiny", "--out", str(out), "--seed", "3"]) == 0
    assert "200 nodes, 800 undirected edges" in capsys.readouterr().out
    loaded = read_npz_graph(out)
    expected = contextual_sbm(**tiny, seed=3)
    assert torch.equal(loaded.x, expected.x)


@pytest.mark.parametrize(
    "argv",
    [["--preset", "nope", "--out", "{tmp}/g.npz"], ["--preset", "arxiv", "--out", "{tmp}"]],
    ids=["unknown preset", "out is a folder"],
)
def test_command_errors_are_one_line(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["generate", *(a.format(tmp=tmp_path) for a in argv)])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("cl2gnn generate: error: ") and error.count("\n") == 1
    assert list(Path(tmp_path).iterdir()) == []


def test_presets_have_the_ogb_sizes():
    arxiv, products = PRESETS["arxiv"], PRESETS["products"]
    assert (arxiv["num_nodes"], arxiv["num_edges"], arxiv["num_features"]) == (
        169_343,
        1_166_243,
        128,
    )
    assert (products["num_nodes"], products["num_edges"], products["num_classes"]) == (
        2_449_029,
        61_859_140,
        47,
    )
