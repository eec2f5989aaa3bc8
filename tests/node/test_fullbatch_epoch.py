"""The full-batch epoch without host work: the propagation graph's structure built once (a
view's dropped edges zero its entries) against the graph rebuilt from the view's edges, in
float64; views drawn as masks against the views applied; the step on masks against the step
on rebuilt graphs; the profiler's count of CSR builds, sorts and read-backs; the losses read
back once per log interval, and a non-finite loss naming its epoch."""

import importlib
import math
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.profiler import ProfilerActivity, profile
from torch_geometric.data import Data
from torch_geometric.transforms import Compose
from torch_geometric.utils import dropout_edge

from cl2gnn.cli import catalogue
from cl2gnn.losses import infonce
from cl2gnn.nn import tiled
from cl2gnn.node import (
    AdaptiveDropEdge,
    AdaptiveMaskFeatures,
    DropEdge,
    GraphEncoder,
    MaskFeatures,
    NodeConfig,
)
from cl2gnn.node.encoders.propagation import PropagationStructure, ValuedGraph, ViewGraphs
from cl2gnn.node.methods import REGISTRY, contrastive, option_value
from cl2gnn.node.training.fullbatch import FullBatchTrainer
from cl2gnn.node.views import view_masks

f64 = torch.float64
node_fit = importlib.import_module(
    "cl2gnn.node.training.fit"
)  # the module: cl2gnn.node.training.fit is fit()


@pytest.fixture
def float64():
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(f64)
    yield
    torch.set_default_dtype(dtype)


@st.composite
def graphs(draw):
    """A random directed multigraph: duplicate edges, self-loops and isolated nodes."""
    n = draw(st.integers(1, 9))
    e = draw(st.integers(0, 30))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, n, (2, e), generator=gen)
    weight = torch.rand(e, generator=gen, dtype=f64) + 0.05
    keep = torch.rand(e, generator=gen) < draw(st.floats(0.0, 1.0))
    return n, edge_index, weight, keep


def dense(graph):
    if isinstance(graph, ValuedGraph):
        graph = graph.to_sparse_csr()
    return graph.to_dense()


@pytest.mark.parametrize(("kind", "self_loops"), [("gcn", True), ("gcn", False), ("sage", True)])
@pytest.mark.parametrize("weighted", [False, True])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(graph=graphs())
def test_a_views_graph_on_the_fixed_structure_equals_the_graph_rebuilt_from_its_edges(
    float64, kind, self_loops, weighted, graph
):
    n, edge_index, weight, keep = graph
    weight = weight if weighted else None
    encoder = GraphEncoder(3, 2, conv=kind, self_loops=self_loops)
    if not PropagationStructure.supports(kind, edge_index, weight, self_loops):
        # two weighted self-loops on one node: which weight gcn_norm keeps is not defined
        looped = edge_index[0][edge_index[0] == edge_index[1]]
        assert kind == "gcn" and self_loops and weighted
        assert looped.numel() > torch.unique(looped).numel()
        return
    structure = PropagationStructure(kind, edge_index, n, weight, self_loops)
    kept_weight = None if weight is None else weight[keep]
    expected = encoder.propagation_graph(edge_index[:, keep], n, edge_weight=kept_weight)
    assert torch.allclose(dense(structure.graph(keep)), expected.to_dense(), rtol=1e-12, atol=0)
    whole = encoder.propagation_graph(edge_index, n, edge_weight=weight)
    assert torch.allclose(dense(structure.graph(None)), whole.to_dense(), rtol=1e-12, atol=0)


@pytest.mark.parametrize("kind", ["gcn", "sage"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(graph=graphs())
def test_a_sampled_views_graph_normalises_by_the_whole_graphs_degrees_less_its_drops(
    float64, kind, graph
):
    # mini-batches: the view of a sampled subgraph normalises by the whole graph's degrees
    # less the view's dropped edges, as GraphEncoder.propagation_graph(..., degree) does
    n, edge_index, _, keep = graph
    encoder = GraphEncoder(3, 2, conv=kind)
    extra = torch.randint(0, 4, (n,), generator=torch.Generator().manual_seed(n))
    whole = encoder.degree(edge_index, n) + extra  # in-edges the sample lacks
    views = ViewGraphs(encoder, edge_index, n, degree=whole)
    assert views.structure is not None
    got = dense(views.kept(keep))
    view_edges = edge_index[:, keep]
    degree = whole - encoder.degree(edge_index, n) + encoder.degree(view_edges, n)
    expected = encoder.propagation_graph(view_edges, n, degree).to_dense()
    assert torch.allclose(got, expected, rtol=1e-12, atol=0)
    assert torch.allclose(dense(views.of(view_edges, None)), expected, rtol=1e-12, atol=0)


def test_drop_edge_draws_its_mask_as_dropout_edge():
    edge_index = torch.randint(0, 50, (2, 400))
    torch.manual_seed(3)
    kept = DropEdge(0.3).edges_kept(Data(edge_index=edge_index, num_nodes=50))
    torch.manual_seed(3)
    _, expected = dropout_edge(edge_index, p=0.3)
    assert torch.equal(kept, expected)
    assert DropEdge(0.0).edges_kept(Data(edge_index=edge_index, num_nodes=50)) is None


def small_graph(n=40, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 16, generator=gen)
    x[x < 0.6] = 0.0
    edge_index = torch.randint(0, n, (2, 6 * n), generator=gen)
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    return Data(x=x, edge_index=torch.cat([edge_index, edge_index.flip(0)], 1))


VIEWS = {
    "grace": Compose([DropEdge(0.3), MaskFeatures(0.4)]),
    "columns first": Compose([MaskFeatures(0.2), DropEdge(0.5)]),
    "gca": Compose([AdaptiveMaskFeatures(0.3), AdaptiveDropEdge(0.4)]),
    # the column step reads the graph the edge step left: drawn on the dropped edges
    "edges first, adaptive columns": Compose([DropEdge(0.5), AdaptiveMaskFeatures(0.3)]),
}


@pytest.mark.parametrize("name", VIEWS)
def test_a_view_drawn_as_masks_equals_the_view_applied(name):
    data = small_graph()
    view = VIEWS[name]
    torch.manual_seed(11)
    edges, columns = view_masks(view, data.clone())
    torch.manual_seed(11)
    out = view(data.clone())
    expected_edges = data.edge_index if edges is None else data.edge_index[:, edges]
    assert torch.equal(out.edge_index, expected_edges)
    expected_x = data.x if columns is None else data.x * columns
    assert torch.equal(out.x, expected_x)


def test_views_that_are_not_masks_are_applied_as_they_are():
    assert view_masks(Compose([DropEdge(0.2), DropEdge(0.3)]), small_graph()) is None
    assert view_masks(lambda data: data, small_graph()) is None


CONFIG = NodeConfig(out_channels=8, epochs=3, drop_edge=(0.3, 0.5), options={"proj_hidden": 8})


@pytest.mark.parametrize(
    ("method", "encoder"),
    [("grace", "gcn"), ("grace", "sage"), ("gca", "gcn"), ("bgrl", "sage"), ("dgi", "gcn")],
)
def test_a_step_on_the_fixed_structure_equals_the_step_on_rebuilt_graphs(
    float64, monkeypatch, method, encoder
):
    data = small_graph()
    data.x = data.x.double()
    config = CONFIG.with_overrides(encoder=encoder)
    runs = []
    for fixed in (True, False):
        if not fixed:
            monkeypatch.setattr(PropagationStructure, "supports", staticmethod(lambda *a: False))
        trainer = FullBatchTrainer(data, method, config, seed=4)
        assert (trainer.graphs.structure is not None) == fixed
        losses = [float(trainer.epoch()) for _ in range(3)]
        runs.append((losses, [p.detach().clone() for p in trainer.model.parameters()]))
    (losses, params), (rebuilt_losses, rebuilt_params) = runs
    assert losses == pytest.approx(rebuilt_losses, rel=1e-12, abs=0)
    for a, b in zip(params, rebuilt_params, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-13)


# what reads a device value back: item(), and the ops whose output size depends on values
WAITS = ("aten::_local_scalar_dense", "aten::nonzero", "aten::_unique2", "aten::unique_consecutive")


def host_work(trainer, epochs):
    """Per epoch: CSR builds, sorts and read-backs outside the optimiser's step."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(epochs):
            trainer.epoch()
    count = {"csr": 0, "sort": 0, "read": 0}
    for event in prof.events():
        if event.name in ("aten::_convert_indices_from_coo_to_csr", "aten::_to_sparse_csr"):
            count["csr"] += 1
        elif event.name == "aten::sort":
            count["sort"] += 1
        elif event.name in WAITS:
            parent = event.cpu_parent
            while parent is not None and not parent.name.startswith("Optimizer.step"):
                parent = parent.cpu_parent
            count["read"] += parent is None
    return count


@pytest.mark.parametrize("method", ["grace", "bgrl", "cca_ssg", "dgi", "mvgrl", "gbt", "gca"])
@pytest.mark.parametrize("encoder", ["gcn", "sage"])
def test_a_full_batch_epoch_builds_no_csr_sorts_nothing_and_reads_nothing_back(method, encoder):
    trainer = FullBatchTrainer(small_graph(), method, CONFIG.with_overrides(encoder=encoder))
    trainer.epoch()
    assert host_work(trainer, 3) == {"csr": 0, "sort": 0, "read": 0}


def test_a_rebuilt_graph_is_counted():
    # the count can fail: a view the structure cannot draw rebuilds and reads back
    data = small_graph()
    trainer = FullBatchTrainer(data, "grace", CONFIG, augment=Compose([DropEdge(0.2)] * 2))
    trainer.epoch()
    count = host_work(trainer, 2)
    assert count["csr"] >= 2 and count["sort"] >= 2 and count["read"] >= 2


def test_fit_reads_the_losses_back_after_the_first_and_the_last_epoch_only(monkeypatch):
    reads = []
    real = node_fit.read_back

    def spy(pending, done):
        reads.append((done, len(pending)))
        return real(pending, done)

    monkeypatch.setattr(node_fit, "read_back", spy)
    monkeypatch.setattr(node_fit, "LOG_SECONDS", math.inf)
    trainer = FullBatchTrainer(small_graph(), "grace", CONFIG.with_overrides(epochs=7))
    result = node_fit.fit(trainer, progress=False)
    assert reads == [(0, 1), (1, 6)]
    assert len(result.losses) == 7 and all(math.isfinite(v) for v in result.losses)


def test_fit_reads_back_every_log_interval(monkeypatch):
    reads = []
    real = node_fit.read_back
    monkeypatch.setattr(node_fit, "read_back", lambda p, d: reads.append(d) or real(p, d))
    monkeypatch.setattr(node_fit, "LOG_SECONDS", 0.0)
    trainer = FullBatchTrainer(small_graph(), "grace", CONFIG.with_overrides(epochs=4))
    assert len(node_fit.fit(trainer, progress=False).losses) == 4
    assert reads == [0, 1, 2, 3]


def test_a_non_finite_loss_stops_the_run_naming_its_epoch(monkeypatch):
    monkeypatch.setattr(node_fit, "LOG_SECONDS", math.inf)  # read back at the end only
    calls = []

    def diverging(z1, z2, h1, h2):
        calls.append(None)
        loss = (z1 - z2).square().mean()
        return loss * math.nan if len(calls) == 3 else loss

    trainer = FullBatchTrainer(small_graph(), diverging, CONFIG.with_overrides(epochs=5))
    with pytest.raises(ValueError, match="loss of epoch 3 is nan"):
        node_fit.fit(trainer, progress=False)


def test_an_epoch_on_the_tiles_reads_nothing_back():
    # 2 × 400 views: the exact loss on the CPU tiles, whose bound on the logits comes from
    # the InfoNCE's unit rows instead of reading the rows' norms back
    trainer = FullBatchTrainer(small_graph(400), "grace", CONFIG)
    trainer.epoch()
    calls = []
    real = tiled.TiledRowLogSumExp.apply
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tiled.TiledRowLogSumExp, "apply", lambda *a: calls.append(1) or real(*a))
        assert host_work(trainer, 2) == {"csr": 0, "sort": 0, "read": 0}
    assert len(calls) == 2  # the tiles ran


def test_the_tiles_read_the_rows_norms_where_no_bound_is_known():
    # the count can fail: outside InfoNCE's unit rows the tiles read the bound back
    x = torch.randn(600, 8, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        tiled.tiled_row_logsumexp(x, 0.5).sum().backward()
    assert any(e.name == "aten::_local_scalar_dense" for e in prof.events())
    with tiled.rows_within(float(x.detach().norm(dim=1).max())):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            tiled.tiled_row_logsumexp(x, 0.5).sum().backward()
    assert not any(e.name == "aten::_local_scalar_dense" for e in prof.events())


@pytest.mark.parametrize("method", ["grace", "gca", "multistage", "knn", "neighbors"])
def test_matmul_dtype_reaches_the_exact_infonce(monkeypatch, method):
    seen = []
    real = infonce.info_nce

    def spying_on(function):
        def spy(*args, **kwargs):
            seen.append(kwargs.get("matmul_dtype"))
            return function(*args, **kwargs)

        return spy

    # the checked loss, and its unchecked form that a method whose options were checked
    # where it was built calls
    spy = spying_on(real)
    spy.unchecked, spy.check_options = spying_on(real.unchecked), real.check_options
    module = REGISTRY[method].forward.__module__  # the module of its forward calls info_nce
    monkeypatch.setattr(sys.modules[module], "info_nce", spy)
    monkeypatch.setattr(contrastive, "info_nce", spy)  # InfoNCEMethod checks its options
    config = CONFIG.with_overrides(epochs=1, matmul_dtype="bfloat16")
    FullBatchTrainer(small_graph(), method, config).epoch()
    assert seen == ["bfloat16"]


def test_matmul_dtype_is_refused_where_it_cannot_apply():
    config = CONFIG.with_overrides(matmul_dtype="bfloat16")
    with pytest.raises(ValueError, match="matmul_dtype='bfloat16': method 'bgrl' does not take it"):
        FullBatchTrainer(small_graph(), "bgrl", config)
    with pytest.raises(ValueError, match="CPU tiles' products; on cuda"):
        FullBatchTrainer(small_graph(), "grace", config, device="cuda")
    with pytest.raises(ValueError, match=r"NodeConfig\.matmul_dtype must be one of 'bfloat16'"):
        option_value("matmul_dtype", "float16")


def test_the_commands_matmul_dtype_names_are_the_tiles():
    assert catalogue.MATMUL_DTYPES == tiled.MATMUL_DTYPES
