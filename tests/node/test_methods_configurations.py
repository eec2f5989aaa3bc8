"""The methods as the library configures them (``default_config`` of each method, on a
published graph, a heterophilous one and a graph without a name, and the presets), against
what their authors' code does, by behaviour: each configuration is trained or run here and
compared with a float64 reference written from the authors' formulas, not with settings
copied into the test.

- MVGRL: the second encoder propagates on the exact personalised-PageRank diffusion,
  built here independently (dense float64 NumPy), and each encoder is one GCN layer
  (kavehhassani/mvgrl 628ed2b, ``utils.py`` 8-15, ``node/train.py``).
- MVGRL: each step trains on random windows of consecutive nodes (``node/train.py``
  146-207: 4 windows of 2,000 nodes, the matrices restricted to them, one shuffle).
- DGI: its encoder is one GCN layer (PetarV-/DGI 61baf67, ``models/dgi.py``).
- DGI and MVGRL: training stops once the loss has not improved for the authors' patience
  and keeps the weights the lowest loss was computed on (``execute.py`` 87-103).
- BGRL: every configuration warms the learning rate up over a tenth of the run, as every
  transductive configuration of its code (nerdslab/bgrl 60f9f19, ``config/*.cfg``:
  ``--epochs=10000``, ``--lr_warmup_epochs=1000``), and its batch norms' momentum is its
  code's (``models.py`` 20).
- Graph Barlow Twins: a batch norm after the first layer only, its code's momentum
  (pbielak/graph-barlow-twins ec62580, ``gssl/full_batch/encoders.py`` 11-25).
"""

from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops

from cl2gnn.node import FullBatchTrainer, ViewBatch, train_node_model
from cl2gnn.node.api import default_config
from cl2gnn.node.presets import AUTHORS_PER_GRAPH, METHOD_DEFAULTS

f64 = torch.float64
NUM_NODES, NUM_FEATURES = 24, 10
# a published graph, a heterophilous graph on disk, and a graph without a name
GRAPHS = ["Cora", "texas", None]
ALPHA = 0.2  # MVGRL's teleport probability (compute_ppr's alpha, its code's 0.2)
WINDOWS = (2_000, 4)  # MVGRL's node/train.py: sample_size = 2000, batch_size = 4 per step
PATIENCE = 20  # DGI's execute.py (patience = 20) and MVGRL's node/train.py (patience = 20)
WARMUP_SHARE = 10  # BGRL's config/*.cfg: 1,000 warm-up epochs of 10,000
BGRL_MOMENTUM = 0.99  # BGRL's models.py: BatchNorm(..., momentum=batchnorm_mm=0.99)
GBT_MOMENTUM = 0.01  # G-BT's encoders.py: nn.BatchNorm1d(2 * out_dim, momentum=0.01)


@pytest.fixture
def float64():
    """float64 throughout (the trainer builds its modules and graphs in the default dtype)."""
    torch.set_default_dtype(f64)
    yield
    torch.set_default_dtype(torch.float32)


def small_graph(dtype=f64) -> Data:
    """An undirected simple graph with bag-of-words features (0 or 1), rows of different
    sums (the row normalisation changes them)."""
    gen = torch.Generator().manual_seed(11)
    edges = torch.randint(0, NUM_NODES, (2, 3 * NUM_NODES), generator=gen)
    edges = coalesce(remove_self_loops(torch.cat([edges, edges.flip(0)], 1))[0])
    x = (torch.rand(NUM_NODES, NUM_FEATURES, generator=gen) < 0.4).to(dtype)
    return Data(x=x, edge_index=edges, num_nodes=NUM_NODES)


def configuration(graph, method):
    """The library's configuration of ``method`` for ``graph`` (a name, or ``None``: the
    small graph itself, which has none)."""
    return default_config(small_graph() if graph is None else graph, method)


def adjacency(edge_index) -> np.ndarray:
    """``A[i, j] = 1`` for the edge ``j -> i`` (what node ``i`` aggregates)."""
    a = np.zeros((NUM_NODES, NUM_NODES))
    for source, target in edge_index.T.tolist():
        a[target, source] = 1.0
    return a


def gcn_matrix(edge_index) -> np.ndarray:
    """``D^-½ (A + I) D^-½``, GCN's propagation (float64 NumPy)."""
    a = adjacency(edge_index) + np.eye(NUM_NODES)
    d = np.diag(a.sum(1) ** -0.5)
    return d @ a @ d


def ppr_matrix(edge_index) -> np.ndarray:
    """MVGRL's ``compute_ppr``: ``α (I - (1 - α) D^-½ (A + I) D^-½)^-1`` (float64 NumPy)."""
    return ALPHA * np.linalg.inv(np.eye(NUM_NODES) - (1 - ALPHA) * gcn_matrix(edge_index))


def features(x, config) -> torch.Tensor:
    """The input as the configuration has the encoder read it (row-normalised or not)."""
    if not config.normalize_features:
        return x
    total = x.sum(1, keepdim=True)
    return x / total.masked_fill(total == 0, 1.0)


def one_gcn_layer(encoder, propagation: np.ndarray, x: torch.Tensor) -> torch.Tensor:
    """``PReLU(P X Wᵀ + b)`` from ``encoder``'s first convolution and activation: the
    authors' encoder (one GCN layer, PReLU) on the propagation matrix ``P``."""
    conv, act = encoder.convs[0], encoder.acts[0]
    p = torch.from_numpy(propagation)
    return F.prelu(p @ (x @ conv.lin.weight.T) + conv.bias, act.weight)


def training_batch(trainer) -> ViewBatch:
    """The two views of one training step, as :class:`FullBatchTrainer` builds them."""
    views = [
        trainer.view_input(v, trainer.x_input, trainer.prepared, trainer.edge_index, trainer.graphs)
        for v in trainer.method.views
    ]
    return ViewBatch(views, trainer.edge_index, trainer.num_nodes)


def local_global(positive, negative, summary, loss) -> torch.Tensor:
    """DGI's loss with ``loss``'s bilinear discriminator: the mean over the nodes of
    ``-log σ(hᵀ W s + b) - log(1 - σ(h̃ᵀ W s + b))``, halved."""
    weight, bias = loss.weight.reshape(positive.size(1), -1), loss.bias

    def score(h):
        return h @ weight @ summary + bias

    total = -F.logsigmoid(score(positive)).sum() - F.logsigmoid(-score(negative)).sum()
    return total / (2 * positive.size(0))


@pytest.mark.parametrize("graph", GRAPHS)
def test_mvgrl_contrasts_the_graph_with_its_exact_diffusion(graph, float64):
    """The loss of MVGRL's configuration: the graph encoder, one GCN layer on ``Â``, and the
    diffusion encoder, one GCN layer on the dense diffusion ``S`` as it is, each node of one
    against the other's summary; and the embedding, their sum on the clean graph."""
    data, config = small_graph(), configuration(graph, "mvgrl")
    trainer = FullBatchTrainer(data, "mvgrl", config)
    method, encoder = trainer.method, trainer.encoder
    torch.manual_seed(9)
    got = method(training_batch(trainer))

    x = features(data.x, config)
    torch.manual_seed(9)
    order = torch.randperm(NUM_NODES)
    a, s = gcn_matrix(data.edge_index), ppr_matrix(data.edge_index)
    h_graph, h_diffusion = (
        one_gcn_layer(encoder, a, x),
        one_gcn_layer(method.diffusion_encoder, s, x),
    )
    c_graph = one_gcn_layer(encoder, a, x[order])
    c_diffusion = one_gcn_layer(method.diffusion_encoder, s, x[order])
    expected = 0.5 * (
        local_global(h_diffusion, c_diffusion, torch.sigmoid(h_graph.mean(0)), method.loss)
        + local_global(h_graph, c_graph, torch.sigmoid(h_diffusion.mean(0)), method.loss)
    )
    assert torch.allclose(got, expected, rtol=1e-9), (got, expected)
    assert torch.allclose(trainer.embed(), (h_graph + h_diffusion).detach(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("graph", GRAPHS)
def test_mvgrl_trains_on_windows_of_consecutive_nodes_as_its_authors(graph, float64):
    """On a graph of more nodes than a window, a step's loss is the mean over random
    windows of consecutive nodes of MVGRL's loss on the whole graph's ``Â`` and ``S``
    restricted to the window, each window's own summaries, one shuffle of the window's rows
    for every window; the embedding stays the whole graph's."""
    data, config = small_graph(), configuration(graph, "mvgrl")
    trainer = FullBatchTrainer(data, "mvgrl", config)
    options = trainer.method.options
    assert (options.window_size, options.windows) == WINDOWS
    size, windows = 10, 3
    config = replace(config, options={**config.options, "window_size": size, "windows": windows})
    trainer = FullBatchTrainer(data, "mvgrl", config)
    method, encoder = trainer.method, trainer.encoder
    torch.manual_seed(9)
    got = method(training_batch(trainer))

    x = features(data.x, config)
    a, s = gcn_matrix(data.edge_index), ppr_matrix(data.edge_index)
    torch.manual_seed(9)
    starts = torch.randint(0, NUM_NODES - size + 1, (windows,)).tolist()
    order = torch.randperm(size)
    assert len(set(starts)) > 1  # the windows differ: each is read at its own place
    losses = []
    for start in starts:
        nodes = slice(start, start + size)
        aw, sw, xw = a[nodes, nodes], s[nodes, nodes], x[nodes]
        h_graph = one_gcn_layer(encoder, aw, xw)
        h_diffusion = one_gcn_layer(method.diffusion_encoder, sw, xw)
        c_graph = one_gcn_layer(encoder, aw, xw[order])
        c_diffusion = one_gcn_layer(method.diffusion_encoder, sw, xw[order])
        losses.append(
            local_global(h_diffusion, c_diffusion, torch.sigmoid(h_graph.mean(0)), method.loss)
            + local_global(h_graph, c_graph, torch.sigmoid(h_diffusion.mean(0)), method.loss)
        )
    expected = 0.5 * torch.stack(losses).mean()
    assert torch.allclose(got, expected, rtol=1e-9), (got, expected)
    h = one_gcn_layer(encoder, a, x) + one_gcn_layer(method.diffusion_encoder, s, x)
    assert torch.allclose(trainer.embed(), h.detach(), rtol=1e-9, atol=1e-12)


def test_mvgrl_trains_on_the_whole_graph_where_it_fits_one_window(float64):
    data, config = small_graph(), configuration(None, "mvgrl")
    for size in (NUM_NODES, None):
        options = {**config.options, "window_size": size}
        method = FullBatchTrainer(data, "mvgrl", replace(config, options=options)).method
        assert not method.windowed(NUM_NODES)
    options = {**config.options, "window_size": NUM_NODES - 1}
    method = FullBatchTrainer(data, "mvgrl", replace(config, options=options)).method
    assert method.windowed(NUM_NODES)


def test_mvgrl_diffuses_a_weighted_graph_by_its_weights(float64):
    """The edge weights weigh ``A`` in the diffusion training propagates on, as in the
    embedding's."""
    data, config = small_graph(), configuration(None, "mvgrl")
    gen = torch.Generator().manual_seed(3)
    data.edge_weight = torch.rand(data.edge_index.size(1), generator=gen, dtype=f64) + 0.5
    trainer = FullBatchTrainer(data, "mvgrl", config)
    method, seen = trainer.method, []
    diffusion_input = method.diffusion_input
    method.diffusion_input = lambda batch: seen.append(diffusion_input(batch)) or seen[-1]
    trainer.step()  # a training step as it is: what its diffusion encoder reads
    a = np.eye(NUM_NODES)
    for (source, target), w in zip(
        data.edge_index.T.tolist(), data.edge_weight.tolist(), strict=True
    ):
        a[target, source] += w
    d = np.diag(a.sum(1) ** -0.5)
    s = ALPHA * np.linalg.inv(np.eye(NUM_NODES) - (1 - ALPHA) * d @ a @ d)
    assert len(seen) == 1 and np.allclose(seen[0].graph.numpy(), s, atol=1e-12)


def sparsified_matrix(edge_index, k) -> np.ndarray:
    """The propagation of ``diffusion_k=k``: each node's ``k`` largest in-weights of the
    diffusion kept, then normalised as a graph by GCN (``D^-½ (W + I) D^-½``, a self-loop of
    weight 1 where the diffusion's own was not kept, the degrees ``W``'s row sums)."""
    s = ppr_matrix(edge_index)
    w = np.zeros_like(s)
    for target in range(NUM_NODES):
        kept = np.argsort(-s[:, target])[:k]  # the edges source -> target of most weight
        w[target, kept] = s[kept, target]
    w[np.diag_indices(NUM_NODES)] = np.where(np.diag(w) > 0, np.diag(w), 1.0)
    d = np.diag(w.sum(1) ** -0.5)
    return d @ w @ d


@pytest.mark.parametrize("graph", GRAPHS)
def test_mvgrl_sparsified_diffusion_is_its_top_k_normalised(graph, float64):
    """With ``diffusion_k`` (for graphs too large for the dense diffusion), the diffusion
    encoder propagates on the top-k diffusion as a GCN normalises a weighted graph."""
    data, config = small_graph(), configuration(graph, "mvgrl").with_overrides(diffusion_k=4)
    trainer = FullBatchTrainer(data, "mvgrl", config)
    method = trainer.method
    got = method.diffusion_input(training_batch(trainer))(method.diffusion_encoder)
    propagation = sparsified_matrix(data.edge_index, 4)
    expected = one_gcn_layer(method.diffusion_encoder, propagation, features(data.x, config))
    assert torch.allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("graph", GRAPHS)
def test_dgi_encoder_is_one_gcn_layer(graph, float64):
    data, config = small_graph(), configuration(graph, "dgi")
    encoder = FullBatchTrainer(data, "dgi", config).encoder
    expected = one_gcn_layer(encoder, gcn_matrix(data.edge_index), features(data.x, config))
    got = encoder(data.x, data.edge_index)
    assert got.shape == expected.shape and torch.allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["dgi", "mvgrl"])
def test_training_stops_on_the_loss_and_keeps_its_lowest_epochs_weights(method):
    """The authors' rule: the run ends ``patience`` epochs after its lowest loss, and the
    embedding is that of the weights the lowest loss was computed on — those the best epoch
    started from, i.e. the snapshot after the epoch before it."""
    config = configuration("Cora", method)
    assert config.patience == PATIENCE
    data = small_graph(torch.float32)
    result = train_node_model(data, method, config, snapshot_every=1, progress=False)
    losses = np.array(result.losses)
    best = int(losses.argmin())
    assert len(losses) < config.epochs  # stopped by the rule, not by the epochs
    assert len(losses) - 1 - best == PATIENCE
    assert best >= 1  # the snapshot before it exists
    assert torch.equal(result.embeddings, result.snapshots[best])
    assert not torch.equal(result.embeddings, result.snapshots[best + 1])


def bgrl_configurations():
    """Every BGRL configuration the library has: the method's own, those per graph, and
    what ``default_config`` hands out on the graphs here."""
    per_graph = [c for (m, _), c in AUTHORS_PER_GRAPH.items() if m == "bgrl"]
    return [METHOD_DEFAULTS["bgrl"], *per_graph, *(configuration(g, "bgrl") for g in GRAPHS)]


@pytest.mark.parametrize("config", bgrl_configurations())
def test_bgrl_warms_up_over_a_tenth_of_the_run(config):
    trainer = FullBatchTrainer(small_graph(torch.float32), "bgrl", config)
    peak, steps = config.learning_rate, config.epochs // WARMUP_SHARE
    rates = [trainer.learning_rate(step) for step in range(steps + 1)]
    assert all(r < peak for r in rates[: steps - 1])
    assert rates[steps - 1] == pytest.approx(peak)
    assert rates[steps] <= peak  # then constant or decaying


def running_mean_momentum(trainer) -> list[float]:
    """Each batch norm's momentum, measured: after one training forward from zero running
    means, ``running = momentum · batch mean`` (torch's convention)."""
    encoder = trainer.encoder
    norms = [m for m in encoder.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    for norm in norms:
        norm.reset_running_stats()
    means = []
    hooks = [
        n.register_forward_hook(lambda m, i, o: means.append(i[0].detach().mean(0))) for n in norms
    ]
    encoder.train()
    with torch.no_grad():
        encoder(trainer.x, trainer.edge_index)
    for hook in hooks:
        hook.remove()
    return [float((n.running_mean / m).median()) for n, m in zip(norms, means, strict=True)]


@pytest.mark.parametrize("graph", GRAPHS)
def test_bgrl_batch_norms_follow_its_code(graph, float64):
    trainer = FullBatchTrainer(small_graph(), "bgrl", configuration(graph, "bgrl"))
    momenta = running_mean_momentum(trainer)
    assert len(momenta) == trainer.encoder.num_layers  # before each PReLU
    assert momenta == pytest.approx([BGRL_MOMENTUM] * len(momenta))


@pytest.mark.parametrize("graph", GRAPHS)
def test_gbt_batch_norm_is_after_the_first_layer_only(graph, float64):
    """One batch norm (after the first layer, its code's momentum), so that the embedding
    the probe reads in eval mode is the last GCN layer's output itself."""
    data, config = small_graph(), configuration(graph, "gbt")
    trainer = FullBatchTrainer(data, "gbt", config)
    assert running_mean_momentum(trainer) == pytest.approx([GBT_MOMENTUM])
    encoder = trainer.encoder.eval()
    hidden = encoder.layer(
        0, encoder.prepare(data.x), encoder.propagation_graph(data.edge_index, NUM_NODES)
    )
    last = encoder.convs[-1]
    p = torch.from_numpy(gcn_matrix(data.edge_index))
    expected = p @ (hidden @ last.lin.weight.T) + last.bias
    assert torch.allclose(encoder(data.x, data.edge_index), expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("graph", ["Cora", "CiteSeer", "PubMed", "WikiCS"])
def test_gca_views_weigh_features_as_its_code(graph, float64):
    """GCA's code (CRIPAC-DIG/GCA 0f17497, ``train.py`` 161-169, ``pGRACE/dataset.py``):
    the features row-normalised on every graph, a column's weight its centrality-weighted
    presence, its magnitude on WikiCS alone; the views read the normalised features."""
    data, config = small_graph(), configuration(graph, "gca")
    trainer = FullBatchTrainer(data, "gca", config)
    total = data.x.sum(1, keepdim=True)
    x = data.x / total.masked_fill(total == 0, 1.0)  # NormalizeFeatures, whatever the config
    assert torch.allclose(trainer.x_input, x, rtol=1e-12)  # what the views read
    phi = torch.from_numpy(adjacency(data.edge_index).sum(0))  # degree centrality
    column = (x != 0).to(f64) if graph != "WikiCS" else x.abs()
    s = (column.T @ phi).log()
    for view, p in zip(trainer.method.views, config.drop_feature, strict=True):
        mask = view.transforms[0]
        expected = ((s.max() - s) / (s.max() - s.mean()) * p).clamp(max=0.7)
        got = mask.probability(trainer.x_input, data.edge_index)
        assert torch.allclose(got.to(f64), expected, atol=1e-6)


def test_rrelu_is_gcas_fixed_slope_while_training():
    """GCA's ``F.rrelu`` keeps its default ``training=False``: the slope is the mean of
    torch's bounds, 1/8 and 1/3, in training too (``nn.RReLU`` would draw it)."""
    from cl2gnn.node import GraphEncoder

    act = GraphEncoder(3, 2, activation="rrelu").acts[0].train()
    x = -torch.rand(50, 7) - 0.1
    assert torch.allclose(act(x), x * (1 / 8 + 1 / 3) / 2)
