"""Edges out of range never reach a kernel through the graph helpers.
PyG's CSR/CSC builds (``index2ptr``: ``torch._convert_indices_from_coo_to_csr``) and torch's
sparse CSR matmul trust their indices: a target ``>= N`` writes past the pointer array, a
source ``>= N`` reads (forward) and writes (backward) past the features; heap corruption or
a segfault follows, not an error. The helpers refuse them first, naming ``edge_index``."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch_geometric.data import Data

from cl2gnn.graphs import TorchNeighborSampler, neighbor_loader, normalized_laplacian
from cl2gnn.nn import AlignConv, AttentionAlignConv

N = 30


def graph(bad: tuple[int, int] | None = None, dtype=torch.long) -> Data:
    edge_index = torch.stack([torch.arange(N), (torch.arange(N) + 1) % N])
    if bad is not None:
        edge_index = torch.cat([edge_index, torch.tensor([bad]).t()], 1)
    return Data(x=torch.randn(N, 4), edge_index=edge_index.to(dtype), num_nodes=N)


HELPERS = {
    "TorchNeighborSampler": lambda data: TorchNeighborSampler(data, [2, 2]),
    "neighbor_loader": lambda data: neighbor_loader(data, [2, 2], batch_size=4),
    "normalized_laplacian": lambda data: normalized_laplacian(data.edge_index, N),
    "AlignConv": lambda data: AlignConv()(data.x, data.edge_index),
    "AttentionAlignConv": lambda data: AttentionAlignConv()(data.x, data.edge_index),
}
OUT_OF_RANGE = st.one_of(st.integers(N, 10**12), st.integers(-(10**12), -1))


@pytest.mark.parametrize("helper", sorted(HELPERS))
@given(value=OUT_OF_RANGE, side=st.sampled_from([0, 1]))
def test_an_edge_out_of_range_is_refused_naming_edge_index(helper, value, side):
    """``[0, 35]`` (a target past N: the CSC pointer write), ``[35, 0]`` (a source past N:
    the SpMM gather) and negative ids alike."""
    bad = (value, 0) if side == 0 else (0, value)
    with pytest.raises(ValueError, match="edge_index refers to node"):
        HELPERS[helper](graph(bad))


@pytest.mark.parametrize("helper", sorted(HELPERS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.int16, torch.bool])
def test_an_edge_index_of_another_dtype_is_refused(helper, dtype):
    with pytest.raises(ValueError, match="edge_index must be an integer tensor"):
        HELPERS[helper](graph(dtype=dtype))


@pytest.mark.parametrize("helper", sorted(HELPERS))
def test_an_edge_index_of_another_shape_is_refused(helper):
    data = graph()
    data.edge_index = torch.zeros(3, 5, dtype=torch.long)
    with pytest.raises(ValueError, match=r"edge_index must have shape \[2, E\]"):
        HELPERS[helper](data)


def test_a_valid_graph_still_samples():
    batch = next(iter(neighbor_loader(graph(), [2, 2], batch_size=4)))
    assert batch.batch_size == 4 and int(batch.edge_index.max()) < batch.num_nodes


def test_the_loader_checks_before_pyg_s_own_sampler_too(monkeypatch):
    """Where pyg-lib is installed ``neighbor_loader`` hands the graph to PyG's
    ``NeighborLoader``, whose CSC build is just as unchecked."""
    import torch_geometric.typing

    monkeypatch.setattr(torch_geometric.typing, "WITH_PYG_LIB", True)
    with pytest.raises(ValueError, match="edge_index refers to node"):
        neighbor_loader(graph((0, N + 5)), [2], batch_size=4)
