"""The path a PyG user takes: their own encoder (PyG's ``GCN``, ``GraphSAGE``, ``GAT``), a
graph loaded by PyG or built by hand, the trained model saved and loaded back. Each test
names a silent wrong result this path once gave (issue 62) and fails if it comes back."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn.models import GAT, GCN, GraphSAGE

from cl2gnn.node import (
    METHODS,
    default_config,
    load_node_dataset,
    train_node_model,
)
from cl2gnn.node.evaluation.auto import choose_method  # exported from cl2gnn.node (issue 62)

DATA = os.environ.get("CL2GNN_DATA")
HAS_CORA = bool(DATA) and (Path(DATA) / "planetoid" / "Cora" / "raw").is_dir()

WIDTH = 16


def graph(num_nodes=40, num_features=12, seed=0, weighted=False) -> Data:
    """A graph built by hand: non-negative features (their row sums differ, so row
    normalisation changes them), random edges both ways, three classes."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(num_nodes, num_features, generator=generator) * 3
    edges = torch.randint(0, num_nodes, (2, 4 * num_nodes), generator=generator)
    edges = torch.cat([edges, edges.flip(0)], 1)
    data = Data(x=x, edge_index=edges, y=torch.arange(num_nodes) % 3)
    if weighted:
        data.edge_weight = torch.rand(edges.size(1), generator=generator) + 0.1
    return data


ENCODERS = {
    "builtin": lambda f: None,
    "GCN": lambda f: GCN(f, WIDTH, num_layers=2, out_channels=WIDTH),
    "GraphSAGE": lambda f: GraphSAGE(f, WIDTH, num_layers=2, out_channels=WIDTH),
}


def short_config(data, method, encoder):
    config = default_config(data, method, encoder=encoder).with_overrides(
        epochs=2, lr_warmup=0, patience=None
    )
    if encoder is None:  # the built-in encoder narrow, as the PyG ones
        config = config.with_overrides(out_channels=WIDTH, hidden_channels=WIDTH)
    if method == "mvgrl" and encoder is not None:  # a sparse diffusion for a message-passing one
        config = config.with_overrides(diffusion_k=8)
    return config


def runs_with(method: str, kind: str) -> bool:
    # MVGRL's diffusion is weighted, which PyG's GraphSAGE ignores: refused (tested below)
    return not (method == "mvgrl" and kind == "GraphSAGE")


def test_a_saved_run_of_your_own_encoder_reproduces_its_embeddings_in_a_fresh_process(tmp_path):
    """Every method × {built-in, PyG GCN, PyG GraphSAGE}: the folder ``save`` writes, loaded
    by ``load_encoder`` in a new process and called as a PyG model on the raw features,
    gives the run's embeddings bit for bit (the recipe's feature normalisation travels with
    the model)."""
    data = graph()
    torch.save({"x": data.x, "edge_index": data.edge_index}, tmp_path / "graph.pt")
    cases = []
    for method in METHODS:
        for kind, make in ENCODERS.items():
            if not runs_with(method, kind):
                continue
            torch.manual_seed(0)
            encoder = make(data.num_features)
            config = short_config(data, method, encoder)
            result = train_node_model(data, method, config, encoder=encoder, progress=False)
            folder = result.save(tmp_path / f"{method}-{kind}")
            cases.append((str(folder), kind, config.normalize_features))
    assert any(normalized for _, kind, normalized in cases if kind != "builtin")  # it matters
    check = textwrap.dedent(
        f"""
        import json, sys, torch
        from torch_geometric.nn.models import GCN, GraphSAGE
        from cl2gnn.node import load_encoder
        graph = torch.load({str(tmp_path / "graph.pt")!r}, weights_only=True)
        make = {{
            "GCN": lambda: GCN({data.num_features}, {WIDTH}, num_layers=2, out_channels={WIDTH}),
            "GraphSAGE": lambda: GraphSAGE(
                {data.num_features}, {WIDTH}, num_layers=2, out_channels={WIDTH}
            ),
        }}
        wrong = []
        for folder, kind, _ in json.loads(sys.argv[1]):
            model = load_encoder(folder, encoder=None if kind == "builtin" else make[kind]())
            with torch.no_grad():
                out = model(graph["x"], graph["edge_index"])
            saved = torch.load(folder + "/embeddings.pt", weights_only=True)
            if not torch.equal(out, saved):
                wrong.append((folder, float((out - saved).abs().max())))
        print(json.dumps(wrong))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", check, json.dumps(cases)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.fixture(scope="module")
def planetoid_cora(tmp_path_factory):
    """Cora as PyG's ``Planetoid`` loads it (from a copy of its raw files)."""
    from torch_geometric.datasets import Planetoid

    root = tmp_path_factory.mktemp("planetoid")
    shutil.copytree(Path(DATA) / "planetoid" / "Cora" / "raw", root / "Cora" / "raw")
    return Planetoid(str(root), "Cora")[0]


@pytest.mark.skipif(not HAS_CORA, reason="needs CL2GNN_DATA with planetoid/Cora")
@pytest.mark.parametrize("method", METHODS)
def test_a_graph_gets_the_same_recipe_however_it_was_loaded(planetoid_cora, method):
    """PyG's ``Planetoid`` and the library's loader give the same configuration: no preset
    is chosen from ``data.name``; one named with ``graph=`` is taken and said."""
    ours = load_node_dataset("Cora")
    assert default_config(planetoid_cora, method) == default_config(ours, method)
    general = default_config(planetoid_cora, method)
    named = default_config(planetoid_cora, method, graph="Cora")
    assert named == default_config("Cora", method)
    assert general.preset and named.preset  # each says what it started from
    if named != general:
        assert named.preset != general.preset and "Cora" in named.preset


def test_a_config_names_its_preset():
    data = graph()
    config = default_config(data, "grace")
    assert "no published configuration" in config.preset or "default" in config.preset
    assert "Cora" in default_config("Cora", "grace").preset


def test_minibatch_embeddings_of_a_pyg_gcn_are_what_the_model_computes():
    """PyG's GCN normalises each sampled subgraph alone in its ``inference``: the
    embeddings after mini-batch training are the model's full-graph forward, as
    ``result.embed`` computes them."""
    data = graph(num_nodes=120)
    torch.manual_seed(0)
    encoder = GCN(data.num_features, WIDTH, num_layers=2, out_channels=WIDTH)
    config = short_config(data, "grace", encoder).with_overrides(batch_size=32)
    result = train_node_model(data, "grace", config, encoder=encoder, progress=False)
    again = result.embed(data.x, data.edge_index)
    assert torch.allclose(again, result.embeddings, atol=1e-6, rtol=0)


class IgnoresWeights(torch.nn.Module):
    """Lists ``edge_weight`` in its signature, as PyG's GraphSAGE does, and ignores it."""

    def __init__(self, f):
        super().__init__()
        self.conv = GraphSAGE(f, WIDTH, num_layers=1)

    def forward(self, x, edge_index, edge_weight=None):
        return self.conv(x, edge_index)


@pytest.mark.parametrize(
    "make",
    [
        lambda f: GraphSAGE(f, WIDTH, num_layers=2),
        lambda f: GAT(f, WIDTH, num_layers=2),
        IgnoresWeights,
    ],
    ids=["GraphSAGE", "GAT", "ignores"],
)
def test_an_encoder_that_ignores_edge_weights_is_refused_for_a_weighted_graph(make):
    data = graph(weighted=True)
    encoder = make(data.num_features)
    config = short_config(data, "grace", encoder)
    with pytest.raises(ValueError, match=r"edge_weight.*(ignores|does not use)"):
        train_node_model(data, "grace", config, encoder=encoder, progress=False)


def test_an_encoder_that_uses_edge_weights_trains_on_a_weighted_graph():
    data = graph(weighted=True)
    encoder = GCN(data.num_features, WIDTH, num_layers=2)
    config = short_config(data, "grace", encoder)
    result = train_node_model(data, "grace", config, encoder=encoder, progress=False)
    unweighted = result.embed(data.x, data.edge_index)
    weighted = result.embed(data.x, data.edge_index, data.edge_weight)
    assert torch.equal(weighted, result.embeddings) and not torch.equal(unweighted, weighted)


def test_your_encoder_is_not_trained_in_place():
    data = graph()
    encoder = GraphSAGE(data.num_features, WIDTH, num_layers=2)
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    config = short_config(data, "grace", encoder)
    result = train_node_model(data, "grace", config, encoder=encoder, progress=False)
    assert result.encoder is not encoder
    assert all(torch.equal(v, before[k]) for k, v in encoder.state_dict().items())
    # the same instance again, untrained (epochs=0): its initial weights, not the run's
    untrained = train_node_model(
        data, "grace", config.with_overrides(epochs=0), encoder=encoder, seed=1, progress=False
    )
    expected = encoder.eval()(data.x, data.edge_index).detach()
    assert torch.equal(untrained.embeddings, expected)
    assert not torch.equal(untrained.embeddings, result.embeddings)


def test_choosing_among_candidates_trains_each_from_your_encoder_as_given():
    """Two identical candidates score alike at every checkpoint: the second does not start
    from the weights the first trained, and the encoder passed is left as it was."""
    data = graph(num_nodes=200)
    encoder = GraphSAGE(data.num_features, WIDTH, num_layers=2)
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    config = short_config(data, "grace", encoder).with_overrides(epochs=8)
    choice = choose_method(
        data, [0], encoder=encoder, listed=[("a", "grace", config), ("b", "grace", config)]
    )
    assert choice.checkpoints["a"] == choice.checkpoints["b"]
    assert all(torch.equal(v, before[k]) for k, v in encoder.state_dict().items())


def test_auto_takes_your_encoder():
    data = graph(num_nodes=60)
    encoder = GraphSAGE(data.num_features, WIDTH, num_layers=2)
    result = train_node_model(data, "auto", encoder=encoder, progress=False)
    assert type(result.encoder) is GraphSAGE and result.encoder is not encoder
    assert result.choice.label in result.choice.scores


def test_mvgrl_exact_diffusion_with_a_message_passing_encoder_is_refused_naming_its_cost():
    data = graph(num_nodes=300, num_features=3000)  # 300² edges × 3,000 features: 1 GiB
    encoder = GCN(data.num_features, WIDTH, num_layers=1)
    config = default_config(data, "mvgrl", encoder=encoder).with_overrides(epochs=1)
    with pytest.raises(ValueError, match=r"diffusion_k.*\d+ weighted edges"):
        train_node_model(data, "mvgrl", config, encoder=encoder, progress=False)
