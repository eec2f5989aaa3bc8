"""TorchNeighborSampler and neighbor_loader against brute-force references written from
the definition of uniform neighbor sampling (PyG's output conventions)."""

import itertools
from collections import Counter

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.profiler import ProfilerActivity, profile
from torch_geometric.data import Data, HeteroData
from torch_geometric.sampler import NodeSamplerInput
from torch_geometric.utils import k_hop_subgraph

from cl2gnn.graphs import TorchNeighborSampler, neighbor_loader


@st.composite
def graphs_and_seeds(draw, max_hops=3):
    n = draw(st.integers(1, 25))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80))
    if draw(st.booleans()):  # in CSC order (sources unsorted): the sampler reads it in place
        edges.sort(key=lambda edge: edge[1])
    # repeated seeds are each sampled for, as pyg-lib does, and share the first's index
    seeds = draw(
        st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=draw(st.booleans()))
    )
    hops = draw(st.lists(st.integers(-1, 4), min_size=1, max_size=max_hops))
    return n, edges, seeds, hops, draw(st.integers(0, 2**31))


def sample(n, edges, seeds, hops, seed):
    edge_index = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t().contiguous()
    sampler = TorchNeighborSampler(
        Data(edge_index=edge_index, num_nodes=n),
        hops,
        generator=torch.Generator().manual_seed(seed),
    )
    out = sampler.sample_from_nodes(NodeSamplerInput(None, torch.tensor(seeds)))
    perm = sampler.edge_permutation
    original = out.edge if perm is None or not out.edge.numel() else perm[out.edge]
    return out, original.tolist()


@given(graphs_and_seeds())
def test_sampled_subgraph_follows_the_definition(case):
    _, edges, seeds, hops, _ = case
    out, original = sample(*case)
    node, row, col = out.node.tolist(), out.row.tolist(), out.col.tolist()
    assert out.metadata == (None, None)
    assert len(row) == len(col) == len(original) == sum(out.num_sampled_edges)
    # replay the hops: which edges were drawn is the sampler's choice, everything else follows
    order, local = list(seeds), {}
    for i, v in enumerate(seeds):
        local.setdefault(v, i)
    begin, first = 0, 0
    for hop, count in enumerate(hops):
        end, last = len(order), first + out.num_sampled_edges[hop]
        assert out.num_sampled_nodes[hop] == end - begin
        for target in range(begin, end):  # grouped by target, in frontier order
            picked = [j for j in range(first, last) if col[j] == target]
            assert picked == list(range(first, first + len(picked)))
            first += len(picked)
            in_edges = [i for i, (_, t) in enumerate(edges) if t == order[target]]
            drawn = [original[j] for j in picked]
            assert len(set(drawn)) == len(drawn) and set(drawn) <= set(in_edges)
            assert len(drawn) == (len(in_edges) if count == -1 else min(count, len(in_edges)))
            for j in picked:  # a known neighbor keeps its index; a new one is appended
                source = edges[original[j]][0]
                if source not in local:
                    local[source] = len(order)
                    order.append(source)
                assert row[j] == local[source]
        assert first == last
        begin = end
    assert out.num_sampled_nodes[-1] == len(order) - begin
    assert node == order


@given(graphs_and_seeds(max_hops=1))
def test_all_neighbors_give_the_two_hop_neighborhood(case):
    n, edges, seeds, _, seed = case
    seeds = list(dict.fromkeys(seeds))
    out, original = sample(n, edges, seeds, [-1, -1], seed)
    edge_index = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t()
    subset, *_ = k_hop_subgraph(torch.tensor(seeds), 2, edge_index, num_nodes=n)
    assert sorted(out.node.tolist()) == subset.tolist()
    one_hop = set(seeds) | {s for s, t in edges if t in seeds}
    assert sorted(original) == [i for i, (_, t) in enumerate(edges) if t in one_hop]


def test_neighbors_are_equally_likely():
    """3,000 nodes share the in-neighbors 0 … 5; each draws 2: every one of the 15 pairs
    should come up about 200 times (chi-square, 14 degrees of freedom)."""
    degree, count, targets = 6, 2, 3000
    source = torch.arange(degree).repeat(targets)
    target = torch.arange(degree, degree + targets).repeat_interleave(degree)
    data = Data(edge_index=torch.stack([source, target]), num_nodes=degree + targets)
    sampler = TorchNeighborSampler(data, [count], generator=torch.Generator().manual_seed(0))
    out = sampler.sample_from_nodes(NodeSamplerInput(None, torch.arange(degree, degree + targets)))
    neighbors = out.node[out.row].view(targets, count).sort(dim=1).values
    pairs = Counter(map(tuple, neighbors.tolist()))
    assert set(pairs) <= set(itertools.combinations(range(degree), count))
    expected = targets / 15
    chi_square = sum(
        (pairs[p] - expected) ** 2 / expected for p in itertools.combinations(range(6), 2)
    )
    assert chi_square < 36.1  # the 99.9 % quantile of chi-square(14)


def test_graph_sorted_by_target_is_sampled_in_place():
    edge_index = torch.randint(0, 30, (2, 300), generator=torch.Generator().manual_seed(0))
    data = Data(edge_index=edge_index, num_nodes=30)
    assert TorchNeighborSampler(data, [3]).edge_permutation is not None
    data = data.sort(sort_by_row=False)
    sampler = TorchNeighborSampler(data, [3])
    assert sampler.edge_permutation is None
    assert sampler.row.data_ptr() == data.edge_index[0].data_ptr()
    # sorted but strided: copied, for PyG's index2ptr miscounts strided targets
    strided = Data(edge_index=data.edge_index.t().contiguous().t(), num_nodes=30)
    copied = TorchNeighborSampler(strided, [3])
    assert copied.edge_permutation is not None
    assert torch.equal(copied.colptr, sampler.colptr)


@pytest.mark.parametrize("by_target", [False, True], ids=["unsorted", "sorted-by-target"])
def test_loader_slices_edge_attributes_by_original_edge_id(by_target):
    generator = torch.Generator().manual_seed(1)
    n, m = 40, 200
    data = Data(
        x=torch.randn(n, 3, generator=generator),
        edge_index=torch.randint(0, n, (2, m), generator=generator),
        edge_weight=torch.randperm(m, generator=generator).float(),
    )
    if by_target:
        data = data.sort(sort_by_row=False)
    input_nodes = torch.randperm(n, generator=generator)[:23]
    loader = neighbor_loader(data, [3, 2], input_nodes=input_nodes, batch_size=5, shuffle=True)
    assert (loader.node_sampler.edge_permutation is None) == by_target
    seen = []
    for batch in loader:
        assert torch.equal(batch.n_id[: batch.batch_size], input_nodes[batch.input_id])
        assert torch.equal(batch.x, data.x[batch.n_id])
        assert torch.equal(batch.edge_weight, data.edge_weight[batch.e_id])
        assert torch.equal(data.edge_index[:, batch.e_id], batch.n_id[batch.edge_index])
        seen += batch.n_id[: batch.batch_size].tolist()
    assert sorted(seen) == sorted(input_nodes.tolist())


@pytest.mark.parametrize("by_target", [False, True], ids=["unsorted", "sorted-by-target"])
def test_pyg_loader_told_whether_the_graph_is_sorted(monkeypatch, by_target):
    """With pyg-lib, PyG's NeighborLoader samples; it reads a sorted graph in place only when
    told ``is_sorted``, and trusts it."""
    import cl2gnn.graphs.sampling as sampling

    calls = []
    monkeypatch.setattr(sampling.torch_geometric.typing, "WITH_PYG_LIB", True)
    monkeypatch.setattr(sampling, "NeighborLoader", lambda data, **kwargs: calls.append(kwargs))
    data = Data(edge_index=torch.tensor([[1, 0, 2], [1, 0, 1]]), num_nodes=3)  # targets 1, 0, 1
    neighbor_loader(data.sort(sort_by_row=False) if by_target else data, [2], batch_size=1)
    assert calls[0]["is_sorted"] is by_target


def test_loader_reproducible_with_a_seed():
    data = Data(edge_index=torch.randint(0, 50, (2, 400)), num_nodes=50)

    def run(seed):
        torch.manual_seed(seed)
        loader = neighbor_loader(data, [4, 4], batch_size=8, shuffle=True)
        return [(b.n_id.tolist(), b.e_id.tolist()) for b in loader]

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_sampler_reproducible_with_a_generator():
    case = (60, torch.randint(0, 60, (500, 2)).tolist(), list(range(10)), [3, 3])
    assert sample(*case, 7)[1] == sample(*case, 7)[1]
    assert sample(*case, 7)[1] != sample(*case, 8)[1]


def test_hub_costs_its_degree_not_a_dense_block():
    """A hub of in-degree 20,000 beside 500 nodes of in-degree 1: the largest allocation
    stays a small multiple of the 20,500 candidate edges (a dense [501, 20000] block of
    keys would be 40x more)."""
    hub, leaves = 20_000, 500
    source = torch.cat([torch.arange(1, hub + 1), torch.arange(1, leaves + 1)])
    target = torch.cat(
        [torch.zeros(hub, dtype=torch.long), torch.arange(hub + 1, hub + 1 + leaves)]
    )
    data = Data(edge_index=torch.stack([source, target]), num_nodes=hub + 1 + leaves)
    sampler = TorchNeighborSampler(data, [5])
    seeds = torch.cat([torch.tensor([0]), torch.arange(hub + 1, hub + 1 + leaves)])
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = sampler.sample_from_nodes(NodeSamplerInput(None, seeds))
    assert out.num_sampled_edges == [5 + leaves]
    largest = max(event.cpu_memory_usage for event in prof.events())
    assert largest <= 32 * (hub + leaves)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: TorchNeighborSampler(d, []), "num_neighbors"),
        (lambda d: TorchNeighborSampler(d, [2, -2]), r"num_neighbors\[1\]"),
        (lambda d: TorchNeighborSampler(HeteroData(), [2]), "homogeneous"),
        (
            lambda d: TorchNeighborSampler(d, [2]).sample_from_nodes(
                NodeSamplerInput(None, torch.tensor([0, 5]))
            ),
            "seed nodes",
        ),
        (lambda d: neighbor_loader(d, [2], replace=True), "replace"),
    ],
)
def test_bad_arguments_raise(make, message):
    data = Data(edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=3)
    with pytest.raises(ValueError, match=message):
        make(data)
