"""Layer-wise inference at the cost of one propagation per layer, and trimmed mini-batch
steps, against the full-graph forward and the untrimmed step, in float64."""

import pytest
import torch
from torch_geometric.data import Data

from cl2gnn.datasets import contextual_sbm
from cl2gnn.graphs import TorchNeighborSampler
from cl2gnn.node import NodeConfig
from cl2gnn.node.encoders.features import prepare_features
from cl2gnn.node.encoders.graph_encoder import GraphEncoder
from cl2gnn.node.training.inference import full_neighborhood, layerwise_embeddings
from cl2gnn.node.training.minibatch import MinibatchTrainer


@pytest.fixture(autouse=True)
def float64():
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(default)


def edge_case_graph(sparse_features=False):
    # duplicated self-loops, a node whose only in-edge is its self-loop, one without edges
    data = contextual_sbm(70, 300, 24, 3, homophily=0.7, feature_signal=2.0, seed=2)
    keep = ((data.edge_index != 69) & (data.edge_index != 68)).all(0)
    loops = torch.tensor([[5, 5, 68], [5, 5, 68]])
    x = data.x.double()
    if sparse_features:  # bag-of-words: sparse enough to be kept as SparseFeatures
        generator = torch.Generator().manual_seed(0)
        x = (torch.rand(70, 200, generator=generator) < 0.03).double()
    return Data(x=x, edge_index=torch.cat([data.edge_index[:, keep], loops], 1), num_nodes=70)


ENCODERS = {
    "gcn": dict(conv="gcn"),
    "gcn without self-loops": dict(conv="gcn", self_loops=False),
    "gcn, narrow first layer": dict(conv="gcn", hidden_channels=4),
    "sage": dict(conv="sage"),
    "sage, narrow first layer, batch norm": dict(conv="sage", hidden_channels=4, batch_norm=True),
    "gat": dict(conv="gat"),
}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse features"])
@pytest.mark.parametrize("readout", ["last", "layers"])
@pytest.mark.parametrize("name", list(ENCODERS))
def test_layerwise_inference_equals_the_full_graph_forward(name, readout, sparse):
    torch.manual_seed(0)
    data = edge_case_graph(sparse)
    kwargs = ENCODERS[name]
    # out_channels 16 widens the 24 dense features (propagated first), 200 sparse ones narrow
    encoder = GraphEncoder(data.x.size(1), 16, "prelu", readout=readout, **kwargs).eval()
    if kwargs.get("batch_norm"):  # statistics of their own, not the identity's
        for norm in encoder.norms:
            norm.running_mean.uniform_(-1, 1)
            norm.running_var.uniform_(0.5, 2)
    with torch.no_grad():
        graph = encoder.propagation_graph(data.edge_index, data.num_nodes)
        full = encoder.embed(prepare_features(data.x), graph)
    sampler = full_neighborhood(TorchNeighborSampler(data, [3, 2]))
    degree = encoder.degree(data.edge_index, data.num_nodes)
    out = layerwise_embeddings(encoder, data.x, sampler, degree, 9, readout)
    assert out.dtype == torch.float64
    assert torch.allclose(out, full, atol=1e-12, rtol=1e-10)


def test_layerwise_inference_refuses_to_normalise_without_the_degrees():
    data = edge_case_graph()
    encoder = GraphEncoder(data.x.size(1), 8, "relu", "gcn")
    sampler = full_neighborhood(TorchNeighborSampler(data, [-1]))
    with pytest.raises(ValueError, match="needs the whole graph's degree"):
        layerwise_embeddings(encoder, data.x, sampler, None, 7)


@pytest.mark.parametrize("conv", ["gcn", "sage"])
def test_a_trimmed_step_equals_the_untrimmed_step(conv):
    # the rows the trimming drops never reach the seeds: the same loss and gradients
    data = edge_case_graph()
    config = NodeConfig(
        out_channels=8,
        encoder=conv,
        epochs=1,
        batch_size=12,
        num_neighbors=(4, 3),
        options={"proj_hidden": 8},
    )
    results = []
    for trim in (True, False):
        trainer = MinibatchTrainer(data, "grace", config, seed=3)
        trainer.trim = trim
        batch = next(iter(trainer.loader))
        reach = batch.batch_size + batch.num_sampled_nodes[1]
        assert batch.num_nodes > reach  # there is a second hop to trim
        loss = trainer.step(batch)
        grads = [p.grad.clone() for p in trainer.model.parameters()]
        results.append((loss, grads))
    (loss, grads), (untrimmed_loss, untrimmed_grads) = results
    assert loss.dtype == torch.float64
    assert torch.allclose(loss, untrimmed_loss, rtol=1e-12, atol=0)
    for grad, untrimmed in zip(grads, untrimmed_grads, strict=True):
        assert torch.allclose(grad, untrimmed, rtol=1e-10, atol=1e-13)
