"""Results you can trust (issue 54): your encoder as a first-class configuration, and a
check at every entry. Each test is one finding of the issue, failing on the code it was
filed against: a warm-up longer than the run (2), ``with_overrides`` to ``None`` (3), an
encoder's rows (4), GraphACL without edges (5), float64 inputs (6), fan-outs and the
built-in encoder's fields beside your encoder, and its ``inference`` (7), the recipe's
normalisation for your encoder (8), edges out of range from a view or in a direct call of
the built-in encoder (9)."""

import json

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from torch_geometric.data import Data
from torch_geometric.nn.models import GCN, GraphSAGE
from torch_geometric.transforms import Compose, NormalizeFeatures

from cl2gnn.cli.main import main
from cl2gnn.graphs import knn_graph
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
from cl2gnn.node.methods import REGISTRY
from cl2gnn.node.presets import METHOD_DEFAULTS
from cl2gnn.node.training import trainer as trainer_module
from cl2gnn.node.training.fullbatch import FullBatchTrainer
from cl2gnn.node.training.minibatch import MinibatchTrainer
from cl2gnn.node.training.plan import BUILTIN_ONLY

N = 30
SMALL = {"epochs": 2, "proj_hidden": 8, "predictor_hidden": 8, "samples_per_node": 3}


def graph(n=N, features=6, seed=0) -> Data:
    """Three noisy communities, edges both ways, no name (no published configuration)."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    x = torch.nn.functional.one_hot(y, features).float() + 0.5 * torch.rand(
        n, features, generator=gen
    )
    source, target = torch.randint(n, (2, 3 * n), generator=gen)
    keep = source != target
    edge_index = torch.stack([source[keep], target[keep]])
    return Data(x=x, edge_index=torch.cat([edge_index, edge_index.flip(0)], 1), y=y)


def pyg_gcn(layers=2) -> GCN:
    return GCN(6, 16, num_layers=layers, out_channels=8)  # takes edge_weight (MVGRL's view)


def small(method, data=None, encoder=None, **changes) -> NodeConfig:
    """``method``'s default configuration, short and narrow."""
    config = default_config(data if data is not None else graph(), method, encoder=encoder)
    builtin = {} if encoder is not None else {"out_channels": 8, "hidden_channels": 16}
    return config.with_overrides(**{**SMALL, **builtin, "lr_warmup": 0, **changes})


# -- 2: a warm-up longer than the run --------------------------------------------------------


@given(epochs=st.integers(0, 50), warmup=st.integers(0, 50))
@example(epochs=0, warmup=1000)  # an untrained baseline of BGRL's recipe
@example(epochs=30, warmup=30)
@example(epochs=29, warmup=30)
def test_a_warm_up_longer_than_the_run_is_refused_and_no_other(epochs, warmup):
    if 0 < epochs < warmup:  # the rate would never reach its value
        with pytest.raises(ValueError, match=f"lr_warmup {warmup} is longer than the run"):
            NodeConfig(epochs=epochs, lr_warmup=warmup)
    else:  # as long as the run, or an untrained baseline (epochs=0): accepted
        assert NodeConfig(epochs=epochs, lr_warmup=warmup).lr_warmup == warmup


def test_bgrls_warm_up_is_refused_for_a_short_run_naming_the_fix():
    bgrl = default_config(graph(), "bgrl")
    assert bgrl.lr_warmup == 1000
    with pytest.raises(ValueError, match=r"with_overrides\(epochs=3, lr_warmup=0\)"):
        bgrl.with_overrides(epochs=3)
    assert bgrl.with_overrides(epochs=3, lr_warmup=0).lr_warmup == 0  # the fix, at once


def test_the_command_refuses_a_warm_up_longer_than_the_run_in_one_line(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["node", "--method", "bgrl", "--epochs", "3", "--seeds", "1", "--no-progress"]
    args += ["--out-channels", "16"]
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--json", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and not out.exists()
    assert "lr_warmup 1000 is longer than the run (epochs 3)" in err[0] and "--lr-warmup" in err[0]
    assert main([*args, "--lr-warmup", "2", "--json", str(out)]) == 0  # the fix it names
    assert json.loads(out.read_text())["config"]["lr_warmup"] == 2


# -- 3: with_overrides sets a field to None --------------------------------------------------


def test_with_overrides_sets_fields_to_none():
    config = NodeConfig(hidden_channels=64, options={"num_keys": 256, "samples_per_node": 5})
    cleared = config.with_overrides(num_keys=None, hidden_channels=None, samples_per_node=None)
    options = cleared.options
    assert (options["num_keys"], cleared.hidden_channels, options["samples_per_node"]) == (
        None,
    ) * 3
    with pytest.raises(ValueError, match=r"NodeConfig\.epochs must be an integer in \[0, "):
        config.with_overrides(epochs=None)  # a field that allows no None refuses it
    with pytest.raises(ValueError, match=r"no field 'tempreature' .*did you mean 'temperature'"):
        config.with_overrides(tempreature=0.5)  # refused where it is written


def test_a_callable_objective_trains_on_a_graph_without_a_published_configuration():
    calls = []

    def alignment(z1, z2, h1, h2):
        calls.append(z1.shape)
        return (z1 - z2).pow(2).sum(1).mean()

    data = graph(20)
    assert (
        default_config(data, "grace").options["num_keys"] == 256
    )  # GRACE's keys, for unpublished graphs
    explicit = default_config(data, "grace").with_overrides(num_keys=None, epochs=2)
    result = train_node_model(data, alignment, explicit, progress=False)
    assert result.config.options.get("num_keys") is None and len(result.losses) == 2
    default = train_node_model(data, alignment, progress=False)  # config=None
    assert (
        default.config.options.get("num_keys") is None
        and len(default.losses) == default.config.epochs
    )
    assert len(calls) == 2 + default.config.epochs


# -- 4: every row of the encoder's output -----------------------------------------------------


class WrongRows(torch.nn.Module):
    """Right on the few rows of the width probe, wrong on the graph: ``first`` rows only, or
    ``twice`` the rows; in ``"training"`` mode only, or always."""

    def __init__(self, kind, when="always"):
        super().__init__()
        self.lin = torch.nn.Linear(6, 8)
        self.kind, self.when = kind, when

    def forward(self, x, edge_index, edge_weight=None):
        h = self.lin(x)
        if edge_weight is not None:  # it reads the weights (MVGRL's diffusion needs that)
            h = h.index_add(0, edge_index[1], edge_weight[:, None] * h[edge_index[0]])
        if x.size(0) <= 8 or (self.when == "training" and not self.training):
            return h
        return h[:8] if self.kind == "first" else torch.cat([h, h])


MINIBATCH = {"batch_size": 12, "num_neighbors": (5, 5), "num_keys": None}


@pytest.mark.parametrize("kind", ["first", "twice"])
@pytest.mark.parametrize("method", ["grace", "bgrl", "cca_ssg", "dgi", "graphacl", "mvgrl"])
@pytest.mark.parametrize("batches", [False, True], ids=["full", "minibatch"])
def test_an_encoder_with_the_wrong_rows_in_training_is_refused(kind, method, batches):
    if batches and not REGISTRY[method].minibatch:
        pytest.skip(f"{method} takes no mini-batches")
    encoder = WrongRows(kind, when="training")  # right in eval mode: the embedding passes
    config = small(method, encoder=encoder, **(MINIBATCH if batches else {}))
    with pytest.raises(ValueError, match=r"one row per node, \[N, d\]; on \d+ nodes it returned"):
        train_node_model(graph(), method, config, encoder=encoder, progress=False)


@pytest.mark.parametrize("kind", ["first", "twice"])
@pytest.mark.parametrize("batches", [False, True], ids=["full", "minibatch"])
def test_an_encoder_with_the_wrong_rows_in_the_embedding_is_refused(kind, batches):
    encoder = WrongRows(kind)
    config = small("grace", encoder=encoder, epochs=0, **(MINIBATCH if batches else {}))
    with pytest.raises(ValueError, match=f"on {N} nodes it returned"):
        train_node_model(graph(), "grace", config, encoder=encoder, progress=False)


# -- 5: a method that reads the graph's edges, on a graph without ----------------------------


@pytest.mark.parametrize("method", sorted(n for n, c in REGISTRY.items() if c.reads_graph))
def test_a_method_whose_positives_are_edges_refuses_a_graph_without_edges(method):
    data = graph()
    data.edge_index = torch.empty(2, 0, dtype=torch.long)
    config = small(method, data)
    with pytest.raises(ValueError, match=f"method '{method}' .* the graph has none.*knn_graph"):
        train_node_model(data, method, config, progress=False)
    data.edge_index = knn_graph(data.x, k=4)  # the fix it names
    result = train_node_model(data, method, config, progress=False)
    assert torch.isfinite(torch.tensor(result.losses)).all()


def test_a_graph_without_edges_still_trains_the_methods_that_need_none():
    data = graph()
    data.edge_index = torch.empty(2, 0, dtype=torch.long)
    result = train_node_model(data, "grace", small("grace", data), progress=False)
    assert torch.isfinite(torch.tensor(result.losses)).all()


# -- 6: float64 inputs --------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_float64_features_are_refused_at_entry_naming_the_fix(method):
    data = graph()
    data.x = data.x.double()
    with pytest.raises(
        ValueError, match=r"data\.x is torch\.float64.* data\.x = data\.x\.float\(\)"
    ):
        train_node_model(data, method, small(method), progress=False)
    own = pyg_gcn().double()  # your encoder in float64 too: the heads are float32
    with pytest.raises(ValueError, match=r"data\.x is torch\.float64"):
        train_node_model(data, method, small(method, encoder=own), encoder=own, progress=False)


def test_float64_weights_beside_float32_features_are_refused():
    data = graph()
    data.edge_weight = torch.rand(data.num_edges, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"data\.edge_weight is torch\.float64 and data\.x"):
        train_node_model(data, "grace", small("grace"), progress=False)


@pytest.fixture
def float64_models():
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(default)


@pytest.mark.parametrize("batches", [False, True], ids=["full", "minibatch"])
def test_float64_features_train_where_the_models_are_float64(float64_models, batches):
    data = graph()
    data.x = data.x.double()
    config = small("grace", **(MINIBATCH if batches else {}))
    assert train_node_model(data, "grace", config, progress=False).embeddings.dtype == torch.float64
    data.x = data.x.float()  # and float32 features are refused there, with their own fix
    with pytest.raises(ValueError, match=r"data\.x = data\.x\.to\(torch\.float64\)"):
        train_node_model(data, "grace", config, progress=False)


# -- 7: fan-outs, the built-in encoder's fields and inference beside your encoder ------------


def test_fan_outs_are_checked_against_your_encoders_depth():
    data = graph()
    config = NodeConfig(epochs=1, batch_size=12, num_neighbors=(10,), options={"proj_hidden": 8})
    with pytest.raises(ValueError, match=r"one fan-out per layer \(2\), got \[10\]"):
        train_node_model(data, "grace", config, encoder=pyg_gcn(2), progress=False)
    deep = config.with_overrides(num_neighbors=(4, 3, 2))  # no built-in depth in the way
    trainer = MinibatchTrainer(data, "grace", deep, encoder=pyg_gcn(3))
    assert list(trainer.loader.node_sampler.num_neighbors) == [4, 3, 2]
    default = MinibatchTrainer(
        data, "grace", deep.with_overrides(num_neighbors=None), encoder=pyg_gcn(3)
    )
    assert list(default.loader.node_sampler.num_neighbors) == [10, 10, 10]  # its depth's


def test_an_encoder_without_a_depth_needs_its_fan_outs():
    data = graph()
    config = NodeConfig(epochs=1, batch_size=12, options={"proj_hidden": 8})
    encoder = Spy()  # no num_layers
    with pytest.raises(ValueError, match=r"declares no depth.*num_neighbors="):
        train_node_model(data, "grace", config, encoder=encoder, progress=False)
    given_ = config.with_overrides(num_neighbors=(7,))
    assert list(
        MinibatchTrainer(data, "grace", given_, encoder=encoder).loader.node_sampler.num_neighbors
    ) == [7]


def test_the_command_checks_fan_outs_against_the_methods_depth(tmp_path, capsys):
    # DGI's configuration is one layer deep: one fan-out (the command counted NodeConfig's 2)
    out = tmp_path / "r.json"
    args = ["node", "--method", "dgi", "--batch-size", "600", "--epochs", "1", "--seeds", "1"]
    args += ["--out-channels", "16", "--no-progress", "--json", str(out)]
    assert main([*args, "--num-neighbors", "5"]) == 0
    assert json.loads(out.read_text())["config"]["num_neighbors"] == [5]
    out.unlink()
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--num-neighbors", "5", "5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and not out.exists()
    assert "one fan-out per layer (1), got [5, 5]" in err[0]


NOT_DEFAULT = {  # a value other than NodeConfig's default, for each built-in encoder field
    "out_channels": 64,
    "activation": "prelu",
    "encoder": "gat",
    "layers": 5,
    "hidden_channels": 999,
    "out_activation": False,
    "batch_norm": True,
    "batch_norm_momentum": 0.5,
    "embedding": "layers",
}


def test_every_built_in_encoder_field_has_a_case_here():
    assert set(NOT_DEFAULT) == set(BUILTIN_ONLY)


@pytest.mark.parametrize("field", sorted(NOT_DEFAULT))
def test_a_built_in_encoder_field_is_refused_beside_your_encoder(field):
    config = NodeConfig(epochs=1, **{field: NOT_DEFAULT[field]}, options={"proj_hidden": 8})
    with pytest.raises(
        ValueError, match=rf"NodeConfig\.{field}=.*default_config\(data, method, encoder=encoder\)"
    ):
        train_node_model(graph(), "grace", config, encoder=pyg_gcn(), progress=False)


@pytest.mark.parametrize("field", ["self_loops", "normalize_features"])
def test_the_fields_other_parts_read_too_are_kept_beside_your_encoder(field):
    # GraphACL's positives include the node itself (self_loops); the normalisation is the
    # data's (item 8)
    config = small("graphacl", encoder=pyg_gcn(), **{field: not getattr(NodeConfig(), field)})
    result = train_node_model(graph(), "graphacl", config, encoder=pyg_gcn(), progress=False)
    assert getattr(result.config, field) is not getattr(NodeConfig(), field)


def test_minibatch_training_embeds_with_your_encoders_full_graph_forward():
    """A layer-wise inference needs the encoder's layers, which an encoder of one's own does
    not say: the embeddings after mini-batches are the trained model's full-graph forward
    (PyG's GCN.inference, which normalises each sampled subgraph alone, is not)."""
    data = graph()
    for encoder in (
        GCN(6, 16, num_layers=2, out_channels=8),
        GraphSAGE(6, 16, num_layers=2, out_channels=8),
        GraphSAGE(6, 16, num_layers=2, out_channels=8, jk="cat"),
    ):
        config = small("grace", encoder=encoder, **MINIBATCH)
        result = train_node_model(data, "grace", config, encoder=encoder, progress=False)
        with torch.no_grad():
            assert torch.equal(result.encoder(data.x, data.edge_index), result.embeddings)


# -- 8: the recipe's configuration for your encoder -------------------------------------------


@pytest.mark.parametrize("method", ["grace", *sorted(METHOD_DEFAULTS)])
def test_default_config_for_your_encoder_is_accepted_as_it_is(method):
    data, encoder = graph(), pyg_gcn()
    config = default_config(data, method, encoder=encoder)
    assert config.normalize_features == default_config(data, method).normalize_features
    assert all(getattr(config, f) == getattr(NodeConfig(), f) for f in BUILTIN_ONLY)
    FullBatchTrainer(data, method, config, encoder=encoder)  # accepted, as it is
    if any(
        getattr(default_config(data, method), f) != getattr(NodeConfig(), f) for f in BUILTIN_ONLY
    ):
        with pytest.raises(ValueError, match=r"default_config\(data, method, encoder=encoder\)"):
            FullBatchTrainer(data, method, default_config(data, method), encoder=encoder)


class Spy(torch.nn.Module):
    """A linear encoder that keeps the features it is given."""

    def __init__(self):
        super().__init__()
        self.lin, self.seen = torch.nn.Linear(6, 8), []

    def forward(self, x, edge_index):
        self.seen.append(x)
        return self.lin(x)


def rows_of(x, table) -> bool:
    """Whether every row of ``x`` is a row of ``table`` (a mini-batch lists its nodes in
    its own order)."""
    return bool((x[:, None, :] == table[None]).all(-1).any(1).all())


@pytest.mark.parametrize("batches", [False, True], ids=["full", "minibatch"])
@pytest.mark.parametrize("normalize", [True, False])
def test_the_recipes_normalisation_reaches_your_encoder_as_a_transform(normalize, batches):
    data, encoder = graph(), Spy()
    changes = {"normalize_features": normalize, "drop_feature": 0.0}
    if batches:
        changes |= {"batch_size": N, "num_neighbors": (-1,)}  # every node: x as it is
    config = small("cca_ssg", encoder=encoder, **changes)
    result = train_node_model(data, "cca_ssg", config, encoder=encoder, progress=False)
    expected = NormalizeFeatures()(data.clone()).x if normalize else data.x
    if normalize:  # the transform changes every row
        assert not rows_of(data.x, expected)
    trained = result.encoder  # the run's copy of the encoder given
    training = trained.seen[1:-1]  # after the width probe, before the embedding
    assert training and all(x.size(0) == N and rows_of(x, expected) for x in training)
    assert (result.transform is not None) == normalize  # and TrainResult says so
    again = result.transform(data) if normalize else data
    assert torch.equal(data.x, graph().x)  # the transform leaves the user's graph alone
    with torch.no_grad():
        assert torch.equal(trained(again.x, again.edge_index), result.embeddings)


def test_config_none_keeps_the_recipes_normalisation_for_your_encoder():
    data = graph()
    result = train_node_model(data, "cca_ssg", encoder=pyg_gcn(), progress=False)
    assert result.config.normalize_features and isinstance(result.transform, NormalizeFeatures)
    builtin = train_node_model(data, "cca_ssg", small("cca_ssg"), progress=False)
    assert builtin.transform is None  # the built-in encoder normalises inside


# -- 9: edges out of range from a view, or in a direct call of the built-in encoder ----------

OUT_OF_RANGE = st.one_of(st.integers(N, 10**12), st.integers(-(10**12), -1))


def with_edge(data: Data, bad: tuple[int, int]) -> Data:
    data.edge_index = torch.cat([data.edge_index, torch.tensor([bad]).t()], 1)
    return data


@pytest.mark.parametrize("conv", ["gcn", "sage", "gat"])
@given(value=OUT_OF_RANGE, side=st.sampled_from([0, 1]))
def test_a_direct_call_of_the_built_in_encoder_refuses_an_edge_out_of_range(conv, value, side):
    """A source past N (``[35, 0]``) reached SAGE's SpMM unchecked: its degree, the one
    index read, is the targets'."""
    data = graph()
    encoder = GraphEncoder(6, 4, conv=conv).eval()
    bad = with_edge(data, (value, 0) if side == 0 else (0, value))
    with pytest.raises(
        ValueError, match=f"edge_index refers to node {value}, but the graph has {N}"
    ):
        encoder(bad.x, bad.edge_index)


def test_the_returned_and_the_reloaded_encoder_refuse_an_edge_out_of_range(tmp_path):
    data = graph()
    config = NodeConfig(epochs=1, out_channels=4, encoder="sage", options={"proj_hidden": 4})
    result = train_node_model(data, "grace", config, progress=False)
    bad = with_edge(graph(), (N + 5, 0))
    for encoder in (result.encoder, load_encoder(result.save(tmp_path))):
        with pytest.raises(ValueError, match=f"edge_index refers to node {N + 5}"):
            encoder(bad.x, bad.edge_index)


def adds_an_edge(bad):
    def view(data):
        return with_edge(data.clone(), bad)

    return view


@pytest.mark.parametrize("own_encoder", [False, True], ids=["built-in", "yours"])
@pytest.mark.parametrize("batches", [False, True], ids=["full", "minibatch"])
@pytest.mark.parametrize("bad", [(100, 0), (0, 100), (-1, 0)], ids=["source", "target", "negative"])
def test_a_view_that_makes_an_edge_out_of_range_is_refused(own_encoder, batches, bad):
    encoder = pyg_gcn() if own_encoder else None
    config = small("grace", encoder=encoder, **(MINIBATCH if batches else {}))
    config = config.with_overrides(encoder="sage") if not own_encoder else config
    views = (adds_an_edge(bad), DropEdge(0.1))
    with pytest.raises(
        ValueError, match=f"augment: a view's edge_index refers to node {bad[0] or bad[1]}"
    ):
        train_node_model(graph(), "grace", config, encoder=encoder, augment=views, progress=False)


def test_a_view_must_keep_the_nodes():
    def drops_a_node(data):
        return Data(x=data.x[1:], edge_index=data.edge_index[:, (data.edge_index > 0).all(0)] - 1)

    with pytest.raises(ValueError, match=f"a view must keep the graph's {N} nodes"):
        train_node_model(graph(), "grace", small("grace"), augment=drops_a_node, progress=False)


def test_only_views_of_ones_own_are_checked(monkeypatch):
    # the library's views subset or reweight the input's edges: no check (a host sync per
    # view on a GPU); a view of one's own, every call
    checked = []
    monkeypatch.setattr(trainer_module, "check_view", lambda view, n: checked.append(n))
    config = small("grace", epochs=3)
    library = Compose([DropEdge(0.2), MaskFeatures(0.1)])
    train_node_model(graph(), "grace", config, augment=library, progress=False)
    train_node_model(graph(), "grace", config, progress=False)  # the configuration's views
    assert checked == []
    train_node_model(graph(), "grace", config, augment=(library, lambda d: d), progress=False)
    assert checked == [N] * 3  # the second view, once a step
