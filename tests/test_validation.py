"""Bad input fails early with a ValueError that says what is wrong."""

import pytest
import torch

from cl2gnn.datasets import sbm_graph
from cl2gnn.graphs import knn_graph, pair_graph, radius_graph
from cl2gnn.losses import InfoNCELoss, KernelInfoNCELoss
from cl2gnn.nn import (
    AlignConv,
    AttentionAlignConv,
    ContrastiveConv,
    MultiStageMemory,
    UniformAttention,
)

X = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
X_NAN = X.clone()
X_NAN[0, 0] = float("nan")
EDGES = pair_graph(3, 2)
KEYS = torch.tensor([0, 2])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: AlignConv()(torch.randn(6), EDGES), "2-D"),
        (lambda: AlignConv()(X, torch.tensor([[0, 1, 2]])), r"\[2, E\]"),
        (lambda: AlignConv()(X, torch.tensor([[0, 9], [1, 2]])), "refers to node 9"),
        (lambda: AlignConv()(X, torch.tensor([[0, -1], [1, 2]])), "refers to node -1"),
        (lambda: AlignConv()(X, torch.empty(2, 0, dtype=torch.long)), "empty"),
        (lambda: AlignConv()(X, EDGES.float()), "integer"),
        (lambda: AlignConv()(X, EDGES, torch.ones(3)), "edge_weight"),
        (lambda: AlignConv()(X_NAN, EDGES), "NaN"),
        (lambda: AlignConv()(torch.full((6, 3), float("inf")), EDGES), "inf"),
        (lambda: UniformAttention(temperature=0.0), "temperature"),
        (lambda: UniformAttention()(X[:1]), "at least 2"),
        (lambda: UniformAttention()(X, weight=torch.ones(5)), "weight"),
        (lambda: UniformAttention()(X, EDGES, exclude_index=EDGES), "exclude_index"),
        (lambda: UniformAttention()(X, keys=torch.tensor([0, 6])), "row 6"),
        (lambda: UniformAttention()(X, keys=torch.tensor([1, 1])), "distinct"),
        (lambda: UniformAttention()(X, keys=torch.tensor([[0, 1]])), "1-D"),
        (lambda: UniformAttention()(X, keys=torch.tensor([], dtype=torch.long)), "non-empty"),
        (lambda: UniformAttention()(X, keys=torch.tensor([0.0, 1.0])), "integer"),
        (lambda: UniformAttention().energy(X, EDGES, keys=torch.tensor([0])), "complete graph"),
        (lambda: ContrastiveConv(positive_in_denominator=False)(X, EDGES, keys=KEYS), "keys"),
        (lambda: InfoNCELoss(num_keys=0), "num_keys"),
        (lambda: InfoNCELoss(num_keys=True), "num_keys"),
        (lambda: InfoNCELoss(num_keys=2.5), "num_keys"),
        (lambda: AttentionAlignConv(normalize="rows"), "normalize"),
        (lambda: AttentionAlignConv()(X, EDGES, h=torch.randn(5, 2)), "rows"),
        (lambda: MultiStageMemory(4, 3, mode="sum"), "mode"),
        (lambda: MultiStageMemory(4, 3).push(X, torch.arange(6)), "sample_id must lie"),
        (lambda: MultiStageMemory(10, 5).push(X, torch.arange(6)), "dim 5"),
        (lambda: InfoNCELoss()(X, torch.randn(6, 4)), "same shape"),
        (lambda: InfoNCELoss()(X, torch.randn(5, 3)), "same shape"),
        (lambda: InfoNCELoss()(X), "exactly one"),
        (lambda: InfoNCELoss()(X, X, edge_index=EDGES), "not both"),
        (lambda: InfoNCELoss()(X, sample_id=torch.arange(5)), "sample_id"),
        (lambda: InfoNCELoss()(X, sample_id=torch.arange(6)), "empty"),
        (lambda: InfoNCELoss(temperature=-1), "temperature"),
        (lambda: KernelInfoNCELoss(mixture="product")(X, X), "mixture"),
        (lambda: knn_graph(X, k=6), "k must satisfy"),
        (lambda: knn_graph(X, k=0), "k must satisfy"),
        (lambda: knn_graph(X, k=2, metric="hamming"), "metric"),
        (lambda: knn_graph(X, k=2, backend="torch", index="ivf"), "exact"),
        (lambda: knn_graph(X[:, :0], k=2), "zero feature"),
        (lambda: radius_graph(X, r=0.0), "r must be"),
        (lambda: pair_graph(4, 1), "num_views"),
        (lambda: pair_graph(), "exactly one"),
        (lambda: sbm_graph([5, 5], 1.2, 0.0), "p must lie"),
    ],
)
def test_bad_input_raises_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_checks_can_be_switched_off():
    import cl2gnn

    bad = X.clone()
    bad[0, 0] = float("nan")
    cl2gnn.set_validation(False)
    try:
        out = AlignConv()(bad, EDGES)  # no value check, no error: NaN propagates
        assert torch.isnan(out).any()
    finally:
        cl2gnn.set_validation(True)
    with pytest.raises(ValueError):
        AlignConv()(bad, EDGES)
