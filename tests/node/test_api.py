"""Node-level training as a library: a user's encoder trained and handed back, the built-in
encoder called the PyG way, views as PyG transforms, save / load / embed, inputs refused
where they enter, and ``default_config`` of any graph accepted by every method."""

import json

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GATConv
from torch_geometric.nn.models import GraphSAGE
from torch_geometric.transforms import Compose, NormalizeFeatures

from cl2gnn.cli.main import main
from cl2gnn.node import (
    METHODS,
    DropEdge,
    GraphEncoder,
    MaskFeatures,
    NodeConfig,
    default_config,
    load_encoder,
    train_node_model,
)
from cl2gnn.node.result import VERSION
from cl2gnn.node.training.plan import check_run

FAST = {
    "epochs": 3,
    "out_channels": 8,
    "hidden_channels": 16,
    "proj_hidden": 8,
    "predictor_hidden": 8,
}
# beside an encoder of one's own: the built-in encoder's fields keep their defaults
OWN = {"epochs": 3, "proj_hidden": 8, "predictor_hidden": 8}


def community_graph(n=60, features=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    x = torch.nn.functional.one_hot(y, features).float() + 0.5 * torch.randn(
        n, features, generator=gen
    )
    source, target = torch.randint(n, (2, 4 * n), generator=gen)
    keep = source != target
    edge_index = torch.stack([source[keep], target[keep]])
    return Data(x=x, edge_index=torch.cat([edge_index, edge_index.flip(0)], 1), y=y)


class TwoGAT(torch.nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.conv1 = GATConv(in_dim, 8, heads=2)
        self.conv2 = GATConv(16, out_dim)

    def forward(self, x, edge_index):
        return self.conv2(torch.relu(self.conv1(x, edge_index)), edge_index)


# -- any encoder ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["grace", "bgrl", "cca_ssg", "graphacl"])
def test_a_users_encoder_is_trained_and_handed_back(method):
    data = community_graph()
    encoder = TwoGAT(6, 12)
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    config = default_config(data, method, encoder=encoder).with_overrides(
        **OWN, lr_warmup=0, normalize_features=False, samples_per_node=3
    )
    result = train_node_model(data, method, config, encoder=encoder, progress=False)
    trained = result.encoder  # a copy of the module given, trained; the module left as it was
    assert type(trained) is TwoGAT and trained is not encoder and not trained.training
    assert all(torch.equal(before[k], v) for k, v in encoder.state_dict().items())
    assert any(not torch.equal(before[k], v) for k, v in trained.state_dict().items())
    assert result.embeddings.shape == (60, 12)  # the method read the width off the encoder
    with torch.no_grad():
        assert torch.equal(trained(data.x, data.edge_index), result.embeddings)
    assert result.method.name == method and len(result.losses) == 3


def test_a_pyg_model_trains_with_the_default_configuration_and_mini_batches():
    data = community_graph()
    model = GraphSAGE(6, 16, num_layers=2, out_channels=8)
    full = train_node_model(data, "grace", encoder=model, progress=False)  # config=None
    assert full.config.normalize_features is False and full.embeddings.shape == (60, 8)
    config = NodeConfig(**OWN, batch_size=20)
    mini = train_node_model(data, "grace", config, encoder=model, progress=False)
    assert len(mini.losses) == 3 and torch.isfinite(torch.tensor(mini.losses)).all()
    with torch.no_grad():  # the trained copy's full-graph forward
        assert torch.equal(mini.encoder(data.x, data.edge_index), mini.embeddings)


def test_a_users_encoder_gets_plain_masked_features():
    seen = []

    class Spy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(6, 8)

        def forward(self, x, edge_index):
            seen.append(x)
            return self.lin(x)

    data = community_graph()
    config = NodeConfig(**OWN, drop_feature=(0.5, 0.5))
    train_node_model(data, "grace", config, encoder=Spy(), progress=False)
    training = [x for x in seen[1:-1] if x.shape == data.x.shape]  # after the width probe
    assert training and all(type(x) is torch.Tensor for x in training)
    masked = [x for x in training if not torch.equal(x, data.x)]
    assert masked and all(((x == 0) | (x == data.x)).all() for x in masked)


def test_a_users_encoder_refuses_options_it_cannot_honour():
    data = community_graph()
    with pytest.raises(ValueError, match="fields of the built-in encoder"):
        train_node_model(data, "grace", NodeConfig(**FAST), encoder=TwoGAT(6, 8))
    with pytest.raises(ValueError, match=r"encoder must be a torch\.nn\.Module"):
        train_node_model(data, "grace", NodeConfig(**OWN), encoder=lambda x, e: x)
    weighted = community_graph()
    weighted.edge_weight = torch.rand(weighted.num_edges)
    with pytest.raises(ValueError, match="the encoder ignores edge_weight"):
        train_node_model(weighted, "grace", NodeConfig(**OWN), encoder=TwoGAT(6, 8))


# -- the built-in encoder, called the PyG way ------------------------------------------------


@pytest.mark.parametrize("conv", ["gcn", "sage", "gat"])
@pytest.mark.parametrize("self_loops", [True, False])
@pytest.mark.parametrize("embedding", ["last", "layers"])
def test_the_builtin_encoder_called_the_pyg_way_gives_the_embeddings(conv, self_loops, embedding):
    data = community_graph()
    config = NodeConfig(
        **FAST, encoder=conv, self_loops=self_loops, embedding=embedding, normalize_features=True
    )
    result = train_node_model(data, "grace", config, progress=False)
    with torch.no_grad():
        assert torch.equal(result.encoder(data.x, data.edge_index), result.embeddings)
        # any graph of the same feature width, without the trainer's propagation graph
        other = community_graph(40, seed=1)
        out = result.encoder(other.x, other.edge_index)
    assert out.shape == (40, result.encoder.out_channels)
    minibatch = config.with_overrides(batch_size=25)
    mini = train_node_model(data, "grace", minibatch, progress=False)  # layer-wise inference
    with torch.no_grad():
        assert torch.allclose(mini.encoder(data.x, data.edge_index), mini.embeddings, atol=1e-5)


@pytest.mark.parametrize("layers", [1, 3])
def test_the_builtin_encoder_takes_any_depth(layers):
    data = community_graph()
    config = NodeConfig(**FAST, layers=layers, embedding="concat")
    result = train_node_model(data, "grace", config, progress=False)
    assert result.encoder.num_layers == layers
    assert result.embeddings.shape == (60, 16 * (layers - 1) + 8)
    mini = train_node_model(
        data, "grace", config.with_overrides(batch_size=30), progress=False
    )  # sampled over `layers` hops, trimmed per layer
    with torch.no_grad():
        assert torch.allclose(mini.encoder(data.x, data.edge_index), mini.embeddings, atol=1e-5)


def test_the_builtin_encoder_uses_edge_weights():
    data = community_graph()
    encoder = GraphEncoder(6, 4, conv="gcn").eval()
    weights = torch.rand(data.num_edges, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        plain = encoder(data.x, data.edge_index)
        weighted = encoder(data.x, data.edge_index, edge_weight=weights)
        doubled = encoder(data.x, data.edge_index, edge_weight=2 * weights)
    assert not torch.allclose(plain, weighted)
    assert not torch.allclose(weighted, doubled)  # GCN's self-loops weigh 1 beside them
    data.edge_weight = weights
    result = train_node_model(data, "grace", NodeConfig(**FAST), progress=False)
    with torch.no_grad():
        assert torch.equal(
            result.encoder(data.x, data.edge_index, edge_weight=weights), result.embeddings
        )
    for refused, message in (
        (NodeConfig(**FAST, encoder="gat"), "GAT encoder takes no edge weights"),
        (NodeConfig(**FAST, batch_size=20), "mini-batch training samples no edge weights"),
    ):
        with pytest.raises(ValueError, match=message):
            train_node_model(data, "grace", refused, progress=False)
    with pytest.raises(ValueError, match="carry no weights"):
        train_node_model(data, "graphacl", NodeConfig(**FAST), progress=False)


# -- views ------------------------------------------------------------------------------------


def test_pyg_transforms_are_views():
    data = community_graph()
    calls = []

    def record(view):
        calls.append(view.num_edges)
        return view

    views = (Compose([DropEdge(0.5), record]), Compose([NormalizeFeatures(), record]))
    result = train_node_model(data, "grace", NodeConfig(**FAST), augment=views, progress=False)
    assert len(calls) == 2 * 3 and len(result.losses) == 3
    assert all(c < data.num_edges for c in calls[0::2]) and calls[1::2] == [data.num_edges] * 3
    one = train_node_model(
        data, "grace", NodeConfig(**FAST), augment=MaskFeatures(0.2), progress=False
    )
    assert len(one.losses) == 3
    with pytest.raises(ValueError, match="augment must be"):
        train_node_model(data, "grace", NodeConfig(**FAST), augment=(MaskFeatures(0.2),))


def test_the_configurations_views_are_the_library_transforms():
    # the same draws whether the configuration builds the views or the user passes them
    data = community_graph()
    config = NodeConfig(**FAST, drop_edge=(0.3, 0.1), drop_feature=(0.2, 0.4))
    views = tuple(Compose([DropEdge(e), MaskFeatures(f)]) for e, f in ((0.3, 0.2), (0.1, 0.4)))
    a = train_node_model(data, "grace", config, seed=5, progress=False)
    b = train_node_model(data, "grace", config, augment=views, seed=5, progress=False)
    assert a.losses == b.losses and torch.equal(a.embeddings, b.embeddings)


# -- saved, reloaded, reused -----------------------------------------------------------------


def test_save_load_and_embed_round_trip(tmp_path):
    data = community_graph()
    config = NodeConfig(**FAST, encoder="sage", embedding="layers", normalize_features=True)
    result = train_node_model(data, "grace", config, seed=4, progress=False)
    folder = result.save(tmp_path)
    assert folder == tmp_path / "seed_4"
    assert sorted(p.name for p in folder.iterdir()) == [
        "checkpoint.pt",
        "embeddings.pt",
        "encoder.pt",
        "losses.csv",
        "losses.png",
    ]
    assert torch.equal(torch.load(folder / "embeddings.pt", weights_only=True), result.embeddings)
    lines = (folder / "losses.csv").read_text().splitlines()
    assert lines[0] == "epoch,loss" and len(lines) == 4
    assert [float(line.split(",")[1]) for line in lines[1:]] == result.losses
    loaded = load_encoder(folder)
    with torch.no_grad():
        assert torch.equal(loaded(data.x, data.edge_index), result.embeddings)
    checkpoint = torch.load(folder / "encoder.pt", weights_only=True)
    assert checkpoint["config"]["encoder"] == "sage" and checkpoint["method"] == "grace"
    # a checkpoint of the earlier format (the method's embedding model under its name's
    # keys) is refused in one line naming both versions, not half-loaded
    checkpoint["version"] = VERSION - 1
    torch.save(checkpoint, folder / "encoder.pt")
    with pytest.raises(ValueError, match=f"checkpoint version {VERSION - 1}, .* version {VERSION}"):
        load_encoder(folder)


def test_a_users_encoder_is_saved_as_its_state_dict(tmp_path):
    data = community_graph()
    config = NodeConfig(**OWN)
    result = train_node_model(data, "grace", config, encoder=TwoGAT(6, 8), progress=False)
    folder = result.save(tmp_path)
    again = TwoGAT(6, 8)
    again.load_state_dict(torch.load(folder / "encoder.pt", weights_only=True)["state_dict"])
    again.eval()
    with torch.no_grad():
        assert torch.equal(again(data.x, data.edge_index), result.embeddings)
    with pytest.raises(ValueError, match="your own encoder"):
        load_encoder(folder)


def test_a_checkpoint_that_needs_code_is_refused(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("ran",))

    path = tmp_path / "encoder.pt"
    torch.save({"format": "cl2gnn-node-encoder", "version": 1, "spec": Payload()}, path)
    with pytest.raises(ValueError, match="without running code"):
        load_encoder(path)
    torch.save({"weights": torch.ones(2)}, path)
    with pytest.raises(ValueError, match="not a cl2gnn node encoder"):
        load_encoder(path)


def test_cli_save_and_embed(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["node", "--method", "grace", "--seeds", "2", "--seed", "5", "--epochs", "2"]
    args.append("--no-progress")
    assert main([*args, "--save", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["result.json", "seed_5", "seed_6"]
    (result,) = json.loads((out / "result.json").read_text())
    assert result["seeds"] == [5, 6] and result["config"]["epochs"] == 2
    embeddings = tmp_path / "e.pt"
    assert main(["embed", "--checkpoint", str(out / "seed_5"), "--out", str(embeddings)]) == 0
    saved = torch.load(out / "seed_5" / "embeddings.pt", weights_only=True)
    assert torch.equal(torch.load(embeddings, weights_only=True), saved)
    other = tmp_path / "g.npz"
    import numpy as np

    np.savez(
        other,
        node_features=np.ones((4, 3), np.float32),
        node_labels=np.array([0, 1, 0, 1]),
        edges=np.array([[0, 1], [2, 3]]),
        train_masks=np.array([[1, 1, 0, 0]], bool),
        val_masks=np.array([[0, 0, 1, 0]], bool),
        test_masks=np.array([[0, 0, 0, 1]], bool),
    )
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(
            ["embed", "--checkpoint", str(out / "seed_5"), "--dataset", str(other), "--out", "x.pt"]
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and "3 features per node" in err[-1] and "reads 64" in err[-1]


# -- one configuration, checked once ----------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "flag"),
    [
        ("temperature", float("inf"), ["--temperature", "inf"]),
        ("temperature", 0.0, ["--temperature", "0"]),
        ("learning_rate", -1.0, ["--lr", "-1"]),
        ("weight_decay", -0.1, ["--weight-decay", "-0.1"]),
        ("drop_edge", 1.5, ["--drop-edge", "1.5"]),
        ("drop_feature", (0.2, -0.1), ["--drop-feature", "0.2", "-0.1"]),
        ("layers", 0, ["--layers", "0"]),
        ("neighbor_weight", 0.0, ["--neighbor-weight", "0"]),
        ("out_channels", 0, ["--out-channels", "0"]),
    ],
)
def test_one_verdict_from_the_library_the_command_and_the_benchmarks(
    field, value, flag, capsys, tmp_path
):
    from benchmarks._shared import node_args as _node_args

    with pytest.raises(ValueError, match=f"NodeConfig.{field}") as library:
        # a field when the configuration is made, a method's option when a run is checked
        check_run(community_graph(), "homophily", NodeConfig(**{field: value}))
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exit_:
        main(["node", *flag, "--json", str(out)])
    command = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(command) == 1 and not out.exists()
    entry = {"method": "grace", field: list(value) if isinstance(value, tuple) else value}
    with pytest.raises(Exception, match=f"NodeConfig.{field}") as benchmark:
        _node_args.check_entry(entry)  # the fields, while parsing
        _node_args.checked_entries({field: value})  # the options, after (check_methods)
    # the library names the method that checked the option: the command, before a method is
    # known, the same verdict without it
    verdict = str(library.value).split(", got")[0].removeprefix("method 'homophily': ")
    assert verdict in command[0] and verdict in str(benchmark.value)


def test_a_config_file_sets_fields_and_the_options_override_it(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("temperature: 0.9\ndrop_edge: 0.1\nepochs: 3\n")
    out = tmp_path / "r.json"
    args = ["node", "--method", "grace", "--seeds", "1", "--config", str(config), "--epochs", "2"]
    args.append("--no-progress")
    assert main([*args, "--json", str(out)]) == 0
    used = json.loads(out.read_text())["config"]
    assert used["temperature"] == 0.9 and used["drop_edge"] == [0.1, 0.1] and used["epochs"] == 2
    config.write_text("temprature: 0.9\n")
    with pytest.raises(SystemExit) as exit_:
        main(["node", "--config", str(config)])
    assert exit_.value.code == 2


def test_seed_is_not_read_as_seeds(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["node", "--method", "grace", "--seed", "3", "--epochs", "2", "--no-progress"]
    args += ["--json", str(out)]
    assert main([*args, "--seeds", "1"]) == 0
    assert json.loads(out.read_text())["seeds"] == [3]
    with pytest.raises(SystemExit) as exit_:
        main(["node", "--see", "3"])  # abbreviations are not accepted
    assert exit_.value.code == 2


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("graph", ["a-graph-nobody-published", "hand-built Data"])
def test_every_method_accepts_default_config_of_an_unknown_graph(method, graph):
    data = community_graph()
    target = data if graph == "hand-built Data" else graph
    config = default_config(target, method).with_overrides(  # a warm-up at most the run
        epochs=1, lr_warmup=0, out_channels=8, hidden_channels=8, proj_hidden=8, predictor_hidden=8
    )
    result = train_node_model(data, method, config, progress=False)
    assert len(result.losses) == 1


# -- inputs checked where they enter ----------------------------------------------------------


def bad_graphs():
    base = community_graph(20)
    yield "no features", Data(edge_index=base.edge_index, num_nodes=20), "data.x"
    yield "integer features", Data(x=base.x.long(), edge_index=base.edge_index), "floating point"
    yield "half features", Data(x=base.x.half(), edge_index=base.edge_index), "float32 or float64"
    nan = base.x.clone()
    nan[3, 1] = float("nan")
    yield "NaN", Data(x=nan, edge_index=base.edge_index), "NaN or inf"
    far = torch.cat([base.edge_index, torch.tensor([[0], [35]])], 1)
    yield "edge out of range", Data(x=base.x, edge_index=far), "refers to node 35"
    negative = torch.cat([base.edge_index, torch.tensor([[-1], [0]])], 1)
    yield "negative edge", Data(x=base.x, edge_index=negative), "refers to node -1"
    yield "float edges", Data(x=base.x, edge_index=base.edge_index.float()), "int64"
    yield "edges [E, 2]", Data(x=base.x, edge_index=base.edge_index.T), r"\[2, E\]"
    yield "empty", Data(x=torch.empty(0, 6), edge_index=torch.empty(2, 0).long()), "empty"
    yield (
        "edge_attr",
        Data(x=base.x, edge_index=base.edge_index, edge_attr=torch.ones(base.num_edges, 2)),
        "edge_attr",
    )
    yield (
        "negative weights",
        Data(x=base.x, edge_index=base.edge_index, edge_weight=-torch.ones(base.num_edges)),
        "non-negative",
    )


@pytest.mark.parametrize(("name", "data", "message"), list(bad_graphs()), ids=lambda v: "")
@pytest.mark.parametrize("method", ["grace", "cca_ssg", "bgrl"])
def test_bad_graphs_are_refused_before_any_kernel(name, data, message, method):
    with pytest.raises(ValueError, match=message):
        train_node_model(data, method, NodeConfig(**FAST), progress=False)


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ([0, 1, -1, 0, 1, 0], "negative label"),
        ([2, 2, 2, 2, 2, 2], "single class"),
    ],
)
def test_labels_the_probe_cannot_read_are_refused_before_training(labels, message):
    from cl2gnn.node.evaluation.experiment import check_probe

    data = community_graph(6)
    data.y = torch.tensor(labels)
    with pytest.raises(ValueError, match=message):
        check_probe(data, ("grace",), range(1))


def test_karate_club_is_refused_in_one_line_before_training(capsys, monkeypatch):
    from torch_geometric.datasets import KarateClub

    from cl2gnn.node.evaluation import experiment as node_app

    karate = KarateClub()[0]
    karate.name = "KarateClub"
    monkeypatch.setattr(node_app, "load_node_dataset", lambda name, root=None: karate)
    trained = []
    monkeypatch.setattr(node_app, "train_node_model", lambda *a, **k: trained.append(a))
    with pytest.raises(SystemExit) as exit_:
        main(["node", "--dataset", "Cora", "--method", "grace", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and "cross-validation" in err[0]
    assert trained == []


def test_the_result_reports_the_epochs_each_seed_ran_where_patience_stopped_it(tmp_path):
    # a learning rate of 1e-9 lowers the loss only by the views' chance: patience 1 stops
    # each run within a few epochs of the 50 configured
    out, config = tmp_path / "run", tmp_path / "config.json"
    config.write_text('{"patience": 1, "learning_rate": 1e-9}')
    args = ["node", "--method", "grace", "--seeds", "2", "--epochs", "50", "--config", str(config)]
    args += ["--no-progress", "--json", str(out)]
    assert main(args) == 0
    result = json.loads(out.read_text())
    assert result["epochs"] == 50
    assert len(result["epochs_run"]) == 2 and all(2 <= e < 50 for e in result["epochs_run"])
