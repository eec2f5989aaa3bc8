"""Inputs of the node methods' objective tests: seeded float64 tensors and the built-in
encoder with two views of a 6-node graph."""

import torch

from cl2gnn.node import EncoderInput, GraphEncoder, ViewBatch

f64 = torch.float64


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=f64)


def small_graph():
    edges = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2], [4, 0], [5, 5]]).T
    return torch.cat([edges, edges.flip(0)], dim=1)


def encoder_and_batch(config, seed=0):
    """The built-in encoder of ``config`` and two views of a 6-node graph that differ in
    features and in edges, so that nothing (batch norm included) makes their outputs
    equal."""
    torch.manual_seed(seed)
    edge_index = small_graph()
    x = randn(6, 4, seed=seed + 10).float()
    other = randn(6, 4, seed=seed + 11).float()
    encoder = GraphEncoder.from_config(4, config)
    views = [
        EncoderInput(x, encoder.propagation_graph(edge_index, 6), prepared=True),
        EncoderInput(other, encoder.propagation_graph(edge_index[:, 2:], 6), prepared=True),
    ]
    return encoder, ViewBatch(views, edge_index, 6)
