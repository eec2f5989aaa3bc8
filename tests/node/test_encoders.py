"""The GraphSAGE encoder (ego/neighbor separation) and the ``layers`` read-out, against
float64 references written from their formulas."""

import pytest
import torch

from cl2gnn.node.encoders.graph_encoder import GraphEncoder


def sage_layer_reference(h, edges, self_weight, neighbor_weight, bias):
    """``W_self h_i + W_nbr mean_{j -> i} h_j + b`` node by node (no neighbors: mean 0)."""
    out = torch.empty(h.size(0), self_weight.size(0), dtype=torch.float64)
    for i in range(h.size(0)):
        sources = [j for j, t in edges if t == i]
        mean = h[sources].mean(0) if sources else torch.zeros(h.size(1), dtype=torch.float64)
        out[i] = self_weight @ h[i] + neighbor_weight @ mean + bias
    return out


def test_sage_encoder_is_self_weights_plus_the_neighbors_mean():
    gen = torch.Generator().manual_seed(0)
    n = 12
    x = torch.randn(n, 5, generator=gen, dtype=torch.float64)
    edge_index = torch.randint(0, n - 1, (2, 30), generator=gen)  # node n-1: no neighbors
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    edges = list(dict.fromkeys(map(tuple, edge_index.t().tolist())))  # a set, in order
    edge_index = torch.tensor(edges).t()
    encoder = GraphEncoder(5, 3, conv="sage").double()
    graph = encoder.propagation_graph(edge_index, n).to(torch.float64)
    out = encoder.encode(x, graph)
    h = x
    for conv in encoder.convs:
        h = torch.relu(
            sage_layer_reference(h, edges, conv.lin_r.weight, conv.lin_l.weight, conv.lin_l.bias)
        )
    assert out.shape == (n, 3)
    assert torch.allclose(out, h.detach(), atol=1e-12)


@pytest.mark.parametrize("conv", ["gcn", "sage"])
def test_layers_readout_is_every_layer_unit_normalised(conv):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(20, 6, generator=gen, dtype=torch.float64)
    edge_index = torch.randint(0, 20, (2, 60), generator=gen)
    encoder = GraphEncoder(6, 4, conv=conv).double()
    graph = encoder.propagation_graph(edge_index, 20).to(torch.float64)

    def read(readout):
        encoder.readout = readout
        return encoder.embed(x, graph)

    layers, first_and_last = read("layers"), read("concat")
    assert layers.shape == (20, 6 + 3 * 4)
    blocks = [layers[:, :6], layers[:, 6:14], layers[:, 14:]]
    expected = [x, first_and_last[:, :8], first_and_last[:, 8:]]
    for block, raw in zip(blocks, expected, strict=True):
        nonzero = raw.norm(dim=1) > 0  # a ReLU layer may be all zero on a node
        assert torch.allclose(block[nonzero], raw[nonzero] / raw[nonzero].norm(dim=1, keepdim=True))
        assert torch.equal(block[~nonzero], raw[~nonzero])
    assert torch.equal(read("last"), first_and_last[:, 8:])
    with pytest.raises(ValueError, match="readout"):
        GraphEncoder(6, 4, conv=conv, readout="sum")
