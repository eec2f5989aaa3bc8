"""The built-in encoder's forward on a view traces whole: ``torch.compile(fullgraph=True)`` of
the training path (a view's column mask and kept edges, :meth:`GraphEncoder.encode` on the
propagation graph of a fixed structure) fails at any graph break; dynamo takes neither a CSR
tensor nor an ``EdgeIndex``, so the traced products are the same sums by index, and the
compiled output and gradients equal the eager ones. ``aot_eager``: dynamo's capture and AOT
autograd's functionalisation are what ``fullgraph`` checks (inductor adds minutes)."""

import pytest
import torch

from cl2gnn.node import GraphEncoder
from cl2gnn.node.encoders.features import SparseFeatures, prepare_features, with_column_mask
from cl2gnn.node.encoders.propagation import ValuedGraph, ViewGraphs

NODES, FEATURES = 30, 40


def graph(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Bag-of-words-like features (mostly zeros) and a random undirected graph."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(NODES, FEATURES, generator=generator)
    x = x * (torch.rand(NODES, FEATURES, generator=generator) < 0.08)
    source = torch.randint(0, NODES, (90,), generator=generator)
    target = torch.randint(0, NODES, (90,), generator=generator)
    edge_index = torch.stack([torch.cat([source, target]), torch.cat([target, source])])
    return x, edge_index


@pytest.mark.parametrize("conv", ["gcn", "sage"])
@pytest.mark.parametrize("sparse", [True, False])
def test_the_encoder_on_a_view_compiles_whole_and_equals_eager(conv, sparse):
    x, edge_index = graph(0)
    torch.manual_seed(0)
    encoder = GraphEncoder(FEATURES, 8, conv=conv, layers=2)
    prepared = prepare_features(encoder.normalize(x), sparse)
    assert isinstance(prepared, SparseFeatures) == sparse
    graphs = ViewGraphs(encoder, edge_index, NODES)
    generator = torch.Generator().manual_seed(1)
    keep = torch.rand(edge_index.size(1), generator=generator) > 0.3
    columns = torch.rand(FEATURES, generator=generator) > 0.4

    def on_view(keep: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
        view_graph = graphs.kept(keep)
        assert isinstance(view_graph, ValuedGraph)  # the fixed structure's graph
        return encoder.encode(with_column_mask(prepared, columns), view_graph)

    def value_and_grads(function) -> list[torch.Tensor]:
        encoder.zero_grad()
        out = function(keep, columns)
        (out.square().sum() + out.sum()).backward()
        return [out.detach(), *(p.grad.clone() for p in encoder.parameters())]

    expected = value_and_grads(on_view)
    torch._dynamo.reset()
    traced = value_and_grads(torch.compile(on_view, fullgraph=True, backend="aot_eager"))
    for a, b in zip(traced, expected, strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)
