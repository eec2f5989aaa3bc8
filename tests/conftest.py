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


def node_method(name, num_nodes, width, temperature, graph=None, **config):
    """Node method ``name`` (its class from the registry) for a graph of ``num_nodes``
    nodes and projections of width ``width``; ``config`` further NodeConfig fields."""
    from cl2gnn.node import NodeConfig, make_method

    settings = NodeConfig(
        out_channels=width, **config, options={"temperature": temperature, "proj_hidden": width}
    )
    return make_method(name, settings, dim=width, num_nodes=num_nodes, graph=graph)
