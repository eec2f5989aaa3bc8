"""Mini-batch node training: seed batches (one and several ranks), layer-wise inference
against the full-graph forward, learning on a class-structured graph, bad input, and two
gloo processes against one process on the same global batches."""

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data

from cl2gnn.datasets import contextual_sbm
from cl2gnn.graphs import TorchNeighborSampler
from cl2gnn.node import NodeConfig, train_node_model
from cl2gnn.node.evaluate import probe_scores
from cl2gnn.node.minibatch import (
    SeedBatches,
    full_neighbourhood,
    layerwise_embeddings,
)
from cl2gnn.node.models import GraphEncoder


def small_graph(num_nodes=400, num_classes=4, seed=0):
    return contextual_sbm(
        num_nodes, 6 * num_nodes, 16, num_classes, homophily=0.8, feature_signal=3.0, seed=seed
    )


@settings(max_examples=40, deadline=None)
@given(
    num_seeds=st.integers(1, 60),
    batch_size=st.integers(1, 25),
    world=st.integers(1, 4),
    seed=st.integers(0, 3),
)
def test_seed_batches_cover_every_node_once_per_epoch_across_ranks(
    num_seeds, batch_size, world, seed
):
    if world > num_seeds or batch_size < world:
        with pytest.raises(ValueError, match="process"):
            SeedBatches(num_seeds, batch_size, rank=0, world_size=world, seed=seed)
        return
    ranks = [
        SeedBatches(num_seeds, batch_size, rank=r, world_size=world, seed=seed)
        for r in range(world)
    ]
    for _ in range(2):  # two epochs: a new permutation each, every node once in each
        shares = [list(r) for r in ranks]
        assert len({len(s) for s in shares}) == 1 and len(shares[0]) == len(ranks[0])
        seen = sorted(node for share in shares for batch in share for node in batch)
        assert seen == list(range(num_seeds))
        for step in range(len(shares[0])):
            sizes = [len(share[step]) for share in shares]
            assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
            assert sum(sizes) <= batch_size + world - 1  # only a merged last batch exceeds


def test_seed_batches_permutation_depends_on_seed_only():
    one = [b for b in SeedBatches(50, 8, seed=3)]
    again = [b for b in SeedBatches(50, 8, seed=3)]
    other = [b for b in SeedBatches(50, 8, seed=4)]
    assert one == again and one != other
    split = [SeedBatches(50, 8, rank=r, world_size=2, seed=3) for r in range(2)]
    assert [a + b for a, b in zip(*map(list, split), strict=True)] == one


def graph_with_edge_cases():
    data = small_graph(60, 3, seed=1)
    loop = torch.tensor([[5], [5]])  # a self-loop, and node 59 without edges
    keep = (data.edge_index != 59).all(0)
    return Data(x=data.x, edge_index=torch.cat([data.edge_index[:, keep], loop], 1))


@pytest.mark.parametrize("conv", ["gcn", "sage", "gat"])
@pytest.mark.parametrize("readout", ["last", "concat", "layers"])
def test_layerwise_inference_equals_the_full_graph_forward(conv, readout):
    torch.manual_seed(0)
    data = graph_with_edge_cases()
    encoder = GraphEncoder(data.x.size(1), 8, "prelu", conv).eval()
    with torch.no_grad():
        graph = encoder.propagation_graph(data.edge_index, data.num_nodes)
        full = encoder(data.x, graph, readout=readout)
    sampler = full_neighbourhood(TorchNeighborSampler(data, [3, 2]))
    degree = encoder.degree(data.edge_index, data.num_nodes)
    out = layerwise_embeddings(encoder, data.x, sampler, degree, 7, readout)
    assert torch.allclose(out, full, atol=1e-5, rtol=1e-5)


def test_layerwise_inference_needs_the_whole_graphs_degrees():
    # the pitfall the degree argument guards: normalising by the degrees inside each
    # batch's neighbourhood (degree=None) changes the rows of GCN's output
    torch.manual_seed(0)
    data = graph_with_edge_cases()
    encoder = GraphEncoder(data.x.size(1), 8, "relu", "gcn").eval()
    with torch.no_grad():
        full = encoder(data.x, encoder.propagation_graph(data.edge_index, data.num_nodes))
    sampler = full_neighbourhood(TorchNeighborSampler(data, [-1]))
    out = layerwise_embeddings(encoder, data.x, sampler, None, 7)
    assert not torch.allclose(out, full, atol=1e-3)


def probe(embeddings, data):
    split = [m.nonzero().view(-1) for m in (data.train_mask, data.val_mask, data.test_mask)]
    return probe_scores(embeddings, data.y, split, 0)["test"]


def test_minibatch_training_learns():
    # features and edges each say something of the classes; the trained encoder must beat
    # both the raw features and the same encoder untrained
    data = contextual_sbm(400, 2400, 16, 4, homophily=0.6, feature_signal=1.5, seed=0)
    config = NodeConfig(
        hidden=32, proj_hidden=32, epochs=8, learning_rate=5e-3, batch_size=64, num_neighbors=(5, 5)
    )
    result = train_node_model(data, "grace", config, seed=0, progress=False)
    untrained = train_node_model(data, "grace", config.with_overrides(epochs=0), progress=False)
    assert len(result.losses) == 8 and result.losses[-1] < 0.97 * result.losses[0]
    trained = probe(result.embeddings, data)
    assert trained > 65.0  # four classes: chance is 25 %
    assert trained > probe(untrained.embeddings, data) + 5 and trained > probe(data.x, data) + 15
    again = train_node_model(data, "grace", config, seed=0, progress=False)
    assert again.losses == result.losses and torch.equal(again.embeddings, result.embeddings)


@pytest.mark.parametrize("method", ["attention", "kernel", "random_walk", "spectral", "knn"])
def test_every_batch_method_trains_in_minibatches(method):
    data = small_graph(120)
    config = NodeConfig(hidden=8, proj_hidden=8, epochs=2, batch_size=40, num_neighbors=(3, 3))
    result = train_node_model(data, method, config, progress=False)
    untrained = train_node_model(data, method, config.with_overrides(epochs=0), progress=False)
    assert len(result.losses) == 2 and result.embeddings.shape == (120, 8)
    assert not torch.allclose(result.embeddings, untrained.embeddings)  # its gradient moved it


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": -3}, "batch_size"),
        ({"num_neighbors": (10,)}, "one fan-out per encoder layer"),
        ({"num_neighbors": (10, 10, 10)}, "one fan-out per encoder layer"),
        ({"num_neighbors": (10, 0)}, r"num_neighbors\[1\]"),
        ({"num_neighbors": (-2, 5)}, r"num_neighbors\[0\]"),
    ],
)
def test_bad_minibatch_settings_are_refused(changes, message):
    data = small_graph(50, 2)
    config = NodeConfig(hidden=4, proj_hidden=4, epochs=1, batch_size=16).with_overrides(**changes)
    with pytest.raises(ValueError, match=message):
        train_node_model(data, "grace", config, progress=False)


@pytest.mark.parametrize("method", ["multistage", "neighbors", "homophily"])
def test_methods_with_per_node_state_are_refused_in_minibatches(method):
    data = small_graph(50, 2)
    config = NodeConfig(hidden=4, proj_hidden=4, epochs=1, batch_size=16)
    with pytest.raises(ValueError, match="mini-batch training takes the methods"):
        train_node_model(data, method, config, progress=False)


# -- two gloo processes against one ------------------------------------------------------

EXACT = dict(  # SAGE on complete neighbourhoods, no augmentation: a seed's output does not
    # depend on which other seeds share its batch, so the ranks' batches add up exactly
    hidden=8,
    proj_hidden=8,
    encoder="sage",
    drop_edge=(0.0, 0.0),
    drop_feature=(0.0, 0.0),
    num_neighbors=(-1, -1),
    batch_size=30,  # 120 nodes: 4 global batches of 30, 15 seeds per rank
    epochs=3,
    learning_rate=1e-2,
)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, out, mode):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        data = small_graph(120, 3)
        config = NodeConfig(distributed=mode, **EXACT)
        result = train_node_model(data, "grace", config, seed=0, progress=False)
        errors = {}
        for name, changes in {"tiny batch": {"batch_size": 1}, "method": {}}.items():
            try:
                method = "knn" if name == "method" else "grace"
                train_node_model(data, method, config.with_overrides(**changes), progress=False)
            except ValueError as error:
                errors[name] = str(error)
        torch.save(
            {"losses": result.losses, "embeddings": result.embeddings, "errors": errors},
            f"{out}/rank{rank}.pt",
        )
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def single_process():
    data = small_graph(120, 3)
    return train_node_model(data, "grace", NodeConfig(**EXACT), seed=0, progress=False)


@pytest.mark.parametrize("mode", ["gather", "ring"])
def test_two_processes_equal_one_process_on_the_same_global_batches(mode, single_process, tmp_path):
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path), mode), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    for result in ranks:  # the epoch losses (global-batch means) and the trained encoder
        assert result["losses"] == pytest.approx(single_process.losses, rel=1e-5)
        assert torch.allclose(result["embeddings"], single_process.embeddings, atol=1e-4)
    assert single_process.losses[-1] < single_process.losses[0]  # the steps did something
    errors = ranks[0]["errors"]
    assert "smaller than the 2 processes" in errors["tiny batch"]
    assert "no negatives across processes" in errors["method"]


# -- the command line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--batch-size", "0"], "--batch-size"),
        (["--batch-size", "64", "--num-neighbors", "10", "0"], "--num-neighbors"),
        (["--batch-size", "64", "--num-neighbors", "10", "-2"], "--num-neighbors"),
        (["--batch-size", "64", "--num-neighbors", "10"], "--num-neighbors"),
        (["--num-neighbors", "5", "5"], "--num-neighbors needs --batch-size"),
        (["--distributed", "ring"], "--distributed needs --batch-size"),
        (["--batch-size", "64", "--distributed", "all"], "--distributed"),
    ],
)
def test_cli_refuses_bad_minibatch_options(argv, message, capsys, tmp_path):
    from cl2gnn.apps.cli import main

    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exit_:
        main(["node", *argv, "--json", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and message in err[0]
    assert not out.exists()


def test_cli_under_torchrun_needs_batch_size(monkeypatch, capsys):
    from cl2gnn.apps.cli import main

    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(SystemExit) as exit_:
        main(["node", "--epochs", "1"])
    assert exit_.value.code == 2
    assert "under torchrun, cl2gnn node needs --batch-size" in capsys.readouterr().err


def test_cli_minibatch_run_writes_its_settings(tmp_path):
    import json

    from cl2gnn.apps.cli import main

    out = tmp_path / "r.json"
    argv = ["node", "--epochs", "1", "--seeds", "1", "--batch-size", "512"]
    assert main([*argv, "--num-neighbors", "4", "-1", "--no-progress", "--json", str(out)]) == 0
    config = json.loads(out.read_text())["config"]
    assert config["batch_size"] == 512 and config["num_neighbors"] == [4, -1]
