import os
import warnings

import pytest
import torch
from hypothesis import HealthCheck, settings

warnings.filterwarnings("ignore", message="`torch.jit.script` is deprecated")

# "ci" (default): a fixed example sequence, so that a run is reproducible; "dev": more,
# fresh random examples for exploring locally (HYPOTHESIS_PROFILE=dev)
settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# under pytest-xdist (``-n 2`` on two cores): one thread per worker and per process a test
# launches, for two processes of two OpenMP threads each on two cores slow torch many-fold
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """Caches (processed datasets, decoded images) in this run's temporary folder, never the
    user's."""
    monkeypatch.setenv("CL2GNN_CACHE", str(tmp_path_factory.getbasetemp() / "cl2gnn-cache"))


@pytest.fixture(scope="module")
def digits():
    """The embedded node dataset: scikit-learn's digits as a cosine kNN graph."""
    from cl2gnn.datasets import load_node_dataset

    return load_node_dataset("digits-knn")


def random_graph(n, num_edges, generator=None, weighted=True):
    edge_index = torch.randint(0, n, (2, num_edges), generator=generator)
    weight = torch.rand(num_edges, generator=generator, dtype=torch.float64) + 0.1
    return edge_index, (weight if weighted else None)


def identity_error(op, x, *args, **kwargs):
    """max |forward(x) - (x - step * grad energy(x))| in float64."""
    x = x.detach().to(torch.float64).requires_grad_(True)
    (grad,) = torch.autograd.grad(op.energy(x, *args, **kwargs), x)
    return float((op(x, *args, **kwargs) - (x - op.step * grad)).abs().max())


class Passthrough(torch.nn.Module):
    """An encoder whose output is its input: a test hands a method its encoder outputs."""

    def forward(self, x, edge_index, edge_weight=None):
        return x


class GivenProjections(torch.nn.Module):
    """A projection head that returns the given projections, one per call, in order: a test
    hands a method its ``z1, z2`` for the encoder outputs ``h1, h2``."""

    def __init__(self, projections):
        super().__init__()
        self.projections, self.calls = projections, 0

    def forward(self, h):
        z = self.projections[self.calls % len(self.projections)]
        self.calls += 1
        return z


def node_method(name, num_nodes, width, temperature, graph=None, **config):
    """Node method ``name`` (its class from the registry, by its configuration's path) for a
    graph of ``num_nodes`` nodes (``graph``'s edges) and outputs of width ``width`` of an
    encoder that passes its input through; ``config`` further NodeConfig fields."""
    from torch_geometric.data import Data

    from cl2gnn.node import REGISTRY, NodeConfig

    settings = NodeConfig(
        out_channels=width, **config, options={"temperature": temperature, "proj_hidden": width}
    )
    edges = graph if graph is not None else torch.empty(2, 0, dtype=torch.long)
    data = Data(x=torch.zeros(num_nodes, width), edge_index=edges, num_nodes=num_nodes)
    return REGISTRY[name].from_config(settings, data, encoder=Passthrough())


def objective(method):
    """``method``'s loss as a function of the projections and the encoder outputs,
    ``(z1, z2, h1, h2) -> loss``: its forward on the views ``h1, h2`` (its encoder, for the
    call, one passing them through), its head giving ``z1, z2``."""
    from cl2gnn.node import EncoderInput, ViewBatch

    def loss(z1, z2, h1, h2):
        head, method.head = method.head, GivenProjections([z1, z2])
        encoder, method.encoder = method.encoder, Passthrough()
        try:
            edges = torch.empty(2, 0, dtype=torch.long, device=z1.device)
            h1 = z1 if h1 is None else h1
            h2 = z2 if h2 is None else h2
            batch = ViewBatch([EncoderInput(h1, edges), EncoderInput(h2, edges)], edges, len(h1))
            return method(batch)
        finally:
            method.head, method.encoder = head, encoder

    return loss


def method_of(name, config, encoder=None, num_nodes=6, graph=None, num_features=4, **context):
    """Node method ``name`` as ``config`` describes it (its configuration's path), holding
    ``encoder`` (``None``: the built-in one of ``config``), for a graph of ``num_nodes``
    nodes with ``graph``'s edges and ``num_features`` features; ``context``: ``views``,
    ``distributed``."""
    from torch_geometric.data import Data

    from cl2gnn.node import REGISTRY

    edges = graph if graph is not None else torch.empty(2, 0, dtype=torch.long)
    data = Data(x=torch.zeros(num_nodes, num_features), edge_index=edges, num_nodes=num_nodes)
    return REGISTRY[name].from_config(config, data, encoder=encoder, **context)
