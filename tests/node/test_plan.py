"""Every compatibility rule once, in ``cl2gnn/node/training/plan.py`` (issue 63): each
combination the library refuses, asked for through its public entries (the library's calls
and the command), is refused by the plan, before any encoder or method is built. A rule
written again in the command, the API, the experiment or the loop would raise elsewhere, and
fail here."""

import traceback
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn.models import GCN, GraphSAGE

from cl2gnn.cli.main import main
from cl2gnn.node import NodeConfig, NodeMethod, default_config, train_node_model
from cl2gnn.node.encoders.graph_encoder import GraphEncoder
from cl2gnn.node.evaluation.experiment import run_experiment

from ..datasets.test_node_data import graph_arrays, write

PLAN = Path(__file__).resolve().parents[2] / "cl2gnn" / "node" / "training" / "plan.py"
SMALL = dict(epochs=2, out_channels=8, options={"proj_hidden": 8})


def graph(weighted=False, edges=True) -> Data:
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(30, 6, generator=generator)
    edge_index = torch.randint(0, 30, (2, 90), generator=generator) if edges else None
    if edge_index is None:
        edge_index = torch.empty(2, 0, dtype=torch.long)
    data = Data(x=x, edge_index=edge_index)
    if weighted:
        data.edge_weight = torch.rand(data.num_edges, generator=generator) + 0.1
    return data


def own():
    return dict(encoder=GCN(6, 8, num_layers=2, out_channels=8))


def command(folder, *options):
    """``cl2gnn node`` on a small graph file, one seed of one epoch, with ``options``."""
    graph_file = write(folder / "g.npz", graph_arrays())
    fixed = ["--dataset", graph_file, "--epochs", "1", "--seeds", "1", "--no-progress"]
    return main(["node", *fixed, *options])


CASES = {
    "fan-outs on a full-batch run": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL, num_neighbors=(5, 5)), progress=False
    ),
    "ring negatives on a full-batch run": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL, distributed="ring"), progress=False
    ),
    "a fan-out per layer": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL, batch_size=10, num_neighbors=(5,)), progress=False
    ),
    "resume with auto": lambda t: train_node_model(graph(), "auto", resume=t, progress=False),
    "checkpoints with select_epoch": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL), select_epoch=True, checkpoint=t, checkpoint_every=1
    ),
    "select_epoch with patience": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL, patience=3), select_epoch=True
    ),
    "patience with checkpoints": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL, patience=3), checkpoint=t, checkpoint_every=1
    ),
    "checkpoints without a folder": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL), checkpoint_every=1, progress=False
    ),
    "mini-batches of a whole-graph method": lambda t: train_node_model(
        graph(), "gca", NodeConfig(**SMALL, batch_size=10), progress=False
    ),
    "mini-batches of a weighted graph": lambda t: train_node_model(
        graph(weighted=True), "grace", NodeConfig(**SMALL, batch_size=10), progress=False
    ),
    "a built-in encoder's field beside yours": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL), progress=False, **own()
    ),
    "weights your encoder ignores": lambda t: train_node_model(
        graph(weighted=True),
        "grace",
        NodeConfig(epochs=1),
        encoder=GraphSAGE(6, 8, num_layers=2),
        progress=False,
    ),
    "edges as positives on a graph without": lambda t: train_node_model(
        graph(edges=False), "neighbors", NodeConfig(**SMALL), progress=False
    ),
    "bfloat16 products off the CPU": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL, matmul_dtype="bfloat16"), device="cuda"
    ),
    "an option its method refuses": lambda t: train_node_model(
        graph(), "grace", NodeConfig(**SMALL, temperature=-1.0), progress=False
    ),
    "an option only others take": lambda t: train_node_model(
        graph(), "bgrl", NodeConfig(epochs=2, num_keys=8), progress=False
    ),
    "more clusters than nodes": lambda t: train_node_model(
        graph(), "homophily", NodeConfig(**SMALL, clusters=31), progress=False
    ),
    "GAT on MVGRL's exact diffusion": lambda t: train_node_model(
        graph(), "mvgrl", NodeConfig(epochs=1, encoder="gat"), progress=False
    ),
    "PolyGCL's GCN without self-loops": lambda t: train_node_model(
        graph(), "polygcl", NodeConfig(epochs=1, self_loops=False), progress=False
    ),
    "PolyGCL's filter batch norm beside your encoder": lambda t: train_node_model(
        graph(), "polygcl", NodeConfig(epochs=1, filter_batch_norm=True), progress=False, **own()
    ),
    "MVGRL's weighted views and an encoder ignoring weights": lambda t: train_node_model(
        graph(),
        "mvgrl",
        NodeConfig(epochs=1, diffusion_k=4),
        encoder=GraphSAGE(6, 8, num_layers=1),
        progress=False,
    ),
    "the experiment: resume without a folder": lambda t: run_experiment(
        write(t / "g.npz", graph_arrays()), "grace", seeds=1, epochs=1, resume=True
    ),
    "the experiment: select_epoch and checkpoints": lambda t: run_experiment(
        write(t / "g.npz", graph_arrays()),
        "grace",
        seeds=1,
        epochs=2,
        select_epoch=True,
        checkpoint_every=1,
        save=str(t),
    ),
    "the command: --resume without --save": lambda t: command(t, "--method", "grace", "--resume"),
    "the command: --num-neighbors without --batch-size": lambda t: command(
        t, "--method", "grace", "--num-neighbors", "4", "4"
    ),
    "the command: --resume with auto": lambda t: command(t, "--save", str(t / "run"), "--resume"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_refusal_comes_from_the_plan_before_anything_is_built(case, tmp_path, monkeypatch):
    built = []
    real_build, real_encoder = NodeMethod.build.__func__, GraphEncoder.__init__

    def build(cls, *args, **kwargs):
        built.append(cls.__name__)
        return real_build(cls, *args, **kwargs)

    def encoder(self, *args, **kwargs):
        built.append("GraphEncoder")
        return real_encoder(self, *args, **kwargs)

    monkeypatch.setattr(NodeMethod, "build", classmethod(build))
    monkeypatch.setattr(GraphEncoder, "__init__", encoder)
    monkeypatch.setenv("CL2GNN_DEBUG", "1")  # the command lets the error through
    with pytest.raises(ValueError) as refused:
        CASES[case](tmp_path)
    frames = {Path(frame.filename) for frame in traceback.extract_tb(refused.tb)}
    assert PLAN in frames, (case, str(refused.value), sorted(f.name for f in frames))
    assert built == [], case


def test_the_plan_is_what_the_method_is_built_from(monkeypatch):
    """The options the plan checked are the ones the method holds: not parsed again."""
    from cl2gnn.node.methods.options import MethodOptions

    parsed = []
    real = MethodOptions.of.__func__

    def of(cls, options, method):
        parsed.append(method)
        return real(cls, options, method)

    monkeypatch.setattr(MethodOptions, "of", classmethod(of))
    config = default_config(graph(), "grace").with_overrides(epochs=1, temperature=0.7)
    result = train_node_model(graph(), "grace", config, progress=False)
    assert parsed == ["grace"] and result.method.options.temperature == 0.7
