"""Checkpoints that resume: a run continued from its checkpoint is the uninterrupted run,
bit for bit on the CPU (losses, embeddings, every parameter, buffer and optimiser state),
for a representative set of methods (GRACE; BGRL's moving-average target, warm-up and
cosine schedules; DGI's and MVGRL's discriminators and corruptions; GraphACL's sampled
neighbors; the multi-stage memory; GCA's adaptive views; mini-batches); files that load
with ``weights_only=True``; checkpoints of another run, or with fields out of bounds,
refused in one line; and ``cl2gnn node --resume`` through the command."""

import json
import pickle
import re

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn.models import GCN

from cl2gnn.cli.main import main
from cl2gnn.datasets import write_npz
from cl2gnn.node import NodeConfig, train_node_model
from cl2gnn.node.training.checkpoint import CHECKPOINT
from cl2gnn.node.training.fullbatch import FullBatchTrainer

FAST = dict(out_channels=8, hidden_channels=16)  # the built-in encoder's, narrow
HEAD, PREDICTOR = {"proj_hidden": 8}, {"predictor_hidden": 8}  # the methods' own
EPOCHS = 4


def community_graph(n=40, seed=0):
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    x = torch.nn.functional.one_hot(y, 6).float() + 0.5 * torch.randn(n, 6, generator=gen)
    source, target = torch.randint(n, (2, 3 * n), generator=gen)
    keep = source < target
    edges = torch.stack([source[keep], target[keep]])
    part = torch.randperm(n, generator=gen) % 4
    return Data(
        x=x,
        y=y,
        edge_index=torch.cat([edges, edges.flip(0)], 1),
        train_mask=torch.stack([part < 2, part >= 2], 1),
        val_mask=torch.stack([part == 2, part == 0], 1),
        test_mask=torch.stack([part == 3, part == 1], 1),
    )


def users_encoder():
    torch.manual_seed(7)  # the user's initial weights, the same in every run compared
    return GCN(6, 16, num_layers=2, out_channels=8)


# method -> (its configuration, mini-batches or not, the user's encoder or not)
RUNS = {
    "grace": ("grace", NodeConfig(**FAST, options=HEAD), False),
    "bgrl schedules": (
        "bgrl",
        NodeConfig(
            **FAST,
            lr_warmup=2,
            lr_cosine=True,
            batch_norm=True,
            options={"ema_cosine": True, **PREDICTOR},
        ),
        False,
    ),
    "bgrl users encoder": ("bgrl", NodeConfig(lr_warmup=2, options=PREDICTOR), True),
    "dgi": ("dgi", NodeConfig(**FAST, layers=1, activation="prelu"), False),
    "mvgrl": ("mvgrl", NodeConfig(**FAST, layers=1, options={"diffusion_k": 6}), False),
    "graphacl": (
        "graphacl",
        NodeConfig(**FAST, options={"samples_per_node": 3, **PREDICTOR}),
        False,
    ),
    "multistage": ("multistage", NodeConfig(**FAST, options=HEAD), False),
    "gca": ("gca", NodeConfig(**FAST, options=HEAD), False),
    "grace mini-batches": ("grace", NodeConfig(**FAST, batch_size=16, options=HEAD), False),
    "cca_ssg mini-batches": ("cca_ssg", NodeConfig(**FAST, batch_size=16, drop_feature=0.5), False),
}
# the runs whose schedules do not read the number of epochs: a finished run trained longer
LONGER = [
    name for name, (_, c, _) in RUNS.items() if not (c.lr_cosine or c.options.get("ema_cosine"))
]


def train(name, epochs, **options):
    method, config, users = RUNS[name]
    return train_node_model(
        community_graph(),
        method,
        config.with_overrides(epochs=epochs),
        encoder=users_encoder() if users else None,
        seed=3,
        progress=False,
        **options,
    )


def assert_same_run(resumed, uninterrupted):
    """Equal losses, embeddings, and every tensor of the run's state (the encoder's and the
    method's parameters and buffers, the optimiser's state), bit for bit."""
    assert resumed.losses == uninterrupted.losses
    assert torch.equal(resumed.embeddings, uninterrupted.embeddings)
    a, b = resumed.checkpoint["trainer"], uninterrupted.checkpoint["trainer"]
    assert a["steps"] == b["steps"]
    assert a["model"].keys() == b["model"].keys()
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    states = a["optimizer"]["state"], b["optimizer"]["state"]
    assert states[0].keys() == states[1].keys()
    for index, state in states[0].items():
        for key, value in state.items():
            assert torch.equal(value, states[1][index][key]), (index, key)


@pytest.mark.parametrize("name", RUNS)
def test_a_run_resumed_from_its_checkpoint_is_the_uninterrupted_run(name, tmp_path):
    """A run of 4 epochs writes its state after epoch 3 (its schedules read 4 epochs); a new
    run resumes from that state to epoch 4. Writing checkpoints changes nothing either."""
    uninterrupted = train(name, EPOCHS)
    checkpointed = train(name, EPOCHS, checkpoint=tmp_path, checkpoint_every=EPOCHS - 1)
    assert torch.load(tmp_path / CHECKPOINT, weights_only=True)["epoch"] == EPOCHS - 1
    assert_same_run(checkpointed, uninterrupted)
    assert_same_run(train(name, EPOCHS, resume=tmp_path), uninterrupted)


@pytest.mark.parametrize("name", LONGER)
def test_a_saved_run_trained_longer_is_the_longer_run(name, tmp_path):
    """A finished run of 2 epochs, saved, then resumed to 4 epochs (``result.save``'s
    ``checkpoint.pt``) is the run of 4 epochs."""
    folder = train(name, EPOCHS // 2).save(tmp_path)
    resumed = train(name, EPOCHS, resume=folder)
    assert_same_run(resumed, train(name, EPOCHS))
    assert resumed.epoch_ms > 0  # the two epochs it trained, not the saved ones


def test_a_finished_run_resumed_at_its_end_trains_nothing_more(tmp_path):
    folder = train("grace", EPOCHS).save(tmp_path)
    again = train("grace", EPOCHS, resume=folder)
    assert_same_run(again, train("grace", EPOCHS))
    assert again.epoch_ms == 0.0


def test_every_saved_file_loads_without_running_code(tmp_path):
    folder = train("bgrl schedules", 2).save(tmp_path)
    for name in ("encoder.pt", "embeddings.pt", CHECKPOINT):
        torch.load(folder / name, weights_only=True)
    state = torch.load(folder / CHECKPOINT, weights_only=True)
    model = state["trainer"]["model"]
    # the method's state beside the encoder it holds: predictor, moving-average target
    assert any(key.startswith("encoder.") for key in model)
    assert any(key.startswith("predictor.") for key in model)
    assert any(key.startswith("target.encoder.") for key in model)
    assert state["epoch"] == 2 and state["trainer"]["steps"] == 2


# -- refusals -----------------------------------------------------------------------------


def tampered(key, value):
    def change(state):
        target = state["trainer"] if key == "steps" else state
        target[key] = value

    return change


REFUSED = {
    "epoch beyond the run's": (tampered("epoch", 10**9), "epoch: the checkpoint is of epoch"),
    "negative epoch": (tampered("epoch", -1), "epoch: must be an integer"),
    "epoch a bool": (tampered("epoch", True), "epoch: must be an integer"),
    "epoch a string": (tampered("epoch", "2"), "epoch: must be an integer"),
    "too few losses": (tampered("losses", [1.0]), "losses: 2 epochs need 2 losses"),
    "steps off": (tampered("steps", 7), "steps: 7 after 2 epochs of 1 steps"),
    "another format": (tampered("format", "x"), "not a cl2gnn node run checkpoint"),
    "another version": (tampered("version", 99), "checkpoint version 99"),
    "an unknown field": (
        lambda state: state["config"].update(colour="red"),
        "NodeConfig has no field 'colour'",
    ),
    "random states not a mapping": (
        lambda state: state["trainer"].update(rng=3),
        "rng: the generators' states by name, got int",
    ),
    "a corrupt random state": (
        lambda state: state["trainer"]["rng"].update(cpu=torch.zeros(3, dtype=torch.uint8)),
        "rng.cpu:",
    ),
    "weights of another shape": (
        lambda state: state["trainer"]["model"].update(
            {"encoder.convs.0.lin.weight": torch.zeros(2, 2)}
        ),
        "model: ",
    ),
    "optimiser state of another shape": (
        lambda state: state["trainer"]["optimizer"]["state"][0].update(exp_avg=torch.zeros(5)),
        r"optimizer: its exp_avg has shape \(5,\)",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_checkpoint_with_a_field_out_of_bounds_is_refused_in_one_line(case, tmp_path):
    change, message = REFUSED[case]
    folder = train("grace", 2).save(tmp_path)
    state = torch.load(folder / CHECKPOINT, weights_only=True)
    change(state)
    torch.save(state, folder / CHECKPOINT)
    with pytest.raises(ValueError, match=message) as error:
        train("grace", 2, resume=folder)
    assert str(error.value).startswith(f"{folder / CHECKPOINT}: ")
    assert "\n" not in str(error.value)


OTHER_RUNS = {
    "method": (dict(method="spectral"), "method: written by a run of method 'grace'"),
    "configuration": (
        dict(config=dict(learning_rate=0.1, temperature=0.9)),
        r"config: written with learning_rate=0.0005 \(this run: 0.1\), temperature=the method's "
        r"default \(this run: 0.9\)",
    ),
    "seed": (dict(seed=4), "seed: written by a run of seed 3, this run's is 4"),
    "graph": (dict(graph=1), "graph: written by a run on another graph"),
    "encoder": (  # the built-in encoder's fields at their defaults beside one's own
        dict(encoder=True, config=dict(out_channels=128, hidden_channels=None)),
        "encoder: written by a run of encoder",
    ),
}


@pytest.mark.parametrize("case", OTHER_RUNS)
def test_a_checkpoint_of_another_run_is_refused_in_one_line(case, tmp_path):
    changes, message = OTHER_RUNS[case]
    folder = train("grace", 2).save(tmp_path)
    config = RUNS["grace"][1].with_overrides(epochs=2, **changes.get("config", {}))
    with pytest.raises(ValueError, match=message) as error:
        train_node_model(
            community_graph(seed=changes.get("graph", 0)),
            changes.get("method", "grace"),
            config,
            encoder=users_encoder() if changes.get("encoder") else None,
            seed=changes.get("seed", 3),
            progress=False,
            resume=folder,
        )
    assert "\n" not in str(error.value)


def test_a_checkpoint_on_the_same_edges_with_other_weights_is_refused(tmp_path):
    """The graph's digest reads the edge weights: the same edges weighted otherwise, or not
    weighted, are another graph; the same weights resume."""
    graph = community_graph()
    weights = torch.rand(graph.num_edges, generator=torch.Generator().manual_seed(1)) + 0.5
    config = RUNS["grace"][1].with_overrides(epochs=2)

    def run(edge_weight, **options):
        weighted = graph.clone()
        if edge_weight is not None:
            weighted.edge_weight = edge_weight
        return train_node_model(weighted, "grace", config, seed=3, progress=False, **options)

    first = run(weights)
    folder = first.save(tmp_path)
    assert run(weights, resume=folder).losses == first.losses
    for other in (weights.flip(0), None):
        with pytest.raises(ValueError, match="graph: written by a run on another graph"):
            run(other, resume=folder)


def test_a_checkpoint_that_needs_code_to_load_is_refused(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("ran",))

    torch.save({"format": "cl2gnn-node-checkpoint", "epoch": Payload()}, tmp_path / CHECKPOINT)
    with pytest.raises(ValueError, match="loads without running code"):
        train("grace", 2, resume=tmp_path)
    (tmp_path / CHECKPOINT).write_bytes(pickle.dumps(3, protocol=2)[:2])  # damaged
    with pytest.raises(ValueError, match="cannot be read as a run checkpoint"):
        train("grace", 2, resume=tmp_path)
    with pytest.raises(ValueError, match="no such run checkpoint"):
        train("grace", 2, resume=tmp_path / "elsewhere")


def test_checkpoint_every_needs_a_folder_and_auto_resumes_nothing(tmp_path):
    with pytest.raises(ValueError, match="checkpoint_every: needs the run's folder"):
        train("grace", 2, checkpoint_every=1)
    with pytest.raises(ValueError, match=r"checkpoint_every must be an integer in \[0, "):
        train("grace", 2, checkpoint=tmp_path, checkpoint_every=-1)
    with pytest.raises(ValueError, match="method 'auto' chooses again"):
        train_node_model(community_graph(), "auto", resume=tmp_path, progress=False)


# -- the command --------------------------------------------------------------------------


class Interrupted(Exception):
    pass


def test_cli_resume_gives_the_uninterrupted_result(tmp_path, monkeypatch, capsys):
    """``cl2gnn node`` interrupted in its second seed's last epoch, then run again with
    ``--resume``: the same scores, losses and saved embeddings as the run that was not
    interrupted; and a finished run of 2 epochs continued to 4 alike."""
    graph = tmp_path / "g.npz"
    write_npz(community_graph(), graph)
    run = ["node", "--dataset", str(graph), "--method", "grace", "--seeds", "2"]
    run += ["--out-channels", "8", "--epochs", "4", "--no-progress"]

    def result(folder):
        assert main([*run, "--save", str(folder), "--json", str(folder) + ".json"]) == 0
        return json.loads((tmp_path / f"{folder.name}.json").read_text())

    def resumed(folder, *options):
        args = [*run, "--save", str(folder), "--resume", "--json", str(folder) + ".json"]
        assert main([*args, *options]) == 0
        return json.loads((tmp_path / f"{folder.name}.json").read_text())

    expected = result(tmp_path / "whole")

    epochs = 0
    step = FullBatchTrainer.epoch

    def epoch_then_stop(self):
        nonlocal epochs
        epochs += 1
        if epochs == 8:  # the second seed's fourth epoch
            raise Interrupted
        return step(self)

    monkeypatch.setattr(FullBatchTrainer, "epoch", epoch_then_stop)
    with pytest.raises(Interrupted):
        main([*run, "--save", str(tmp_path / "cut"), "--checkpoint-every", "3"])
    monkeypatch.undo()
    assert not (tmp_path / "cut" / "result.json").exists()  # staged: the folder's run is whole
    assert (tmp_path / "cut" / ".cl2gnn.checkpoints" / "seed_1" / "checkpoint.pt").is_file()
    trained = []
    monkeypatch.setattr(FullBatchTrainer, "epoch", lambda self: trained.append(1) or step(self))
    capsys.readouterr()
    got = resumed(tmp_path / "cut")
    monkeypatch.undo()
    assert len(trained) == 1  # seed 0 was done; seed 1 goes on from its third epoch
    assert got["resumed_from"] == {"0": 4, "1": 3}  # said in the JSON and in the output
    assert "resumed: seed 0 from epoch 4, seed 1 from epoch 3" in capsys.readouterr().out
    assert not (tmp_path / "cut" / ".cl2gnn.checkpoints").exists()  # finished: gone
    assert got["scores"] == expected["scores"] and got["final_loss"] == expected["final_loss"]
    for seed in (0, 1):
        name = f"seed_{seed}/embeddings.pt"
        assert torch.equal(
            torch.load(tmp_path / "cut" / name, weights_only=True),
            torch.load(tmp_path / "whole" / name, weights_only=True),
        )

    short = [*run[:-3], "--epochs", "2", "--no-progress", "--save", str(tmp_path / "longer")]
    assert main(short) == 0
    got = resumed(tmp_path / "longer")
    assert got["scores"] == expected["scores"] and got["final_loss"] == expected["final_loss"]
    assert got["epochs"] == 4

    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main([*run, "--lr", "0.1", "--save", str(tmp_path / "longer"), "--resume"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith("cl2gnn node: error: ") and "learning_rate=0.0005 (this run: 0.1)" in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--resume"], r"resume: needs the run's folder \(checkpoint=, or --save DIR\)"),
        (["--checkpoint-every", "2"], "checkpoint_every: needs the run's folder"),
        (["--save", "D", "--resume", "--method", "auto"], "method 'auto' chooses again"),
        (["--save", "D", "--checkpoint-every", "0"], r"--checkpoint-every: .*in \[1, "),
    ],
)
def test_cli_resume_options_are_checked_before_anything_runs(options, message, capsys, tmp_path):
    options = [str(tmp_path / o) if o == "D" else o for o in options]
    with pytest.raises(SystemExit) as exit_:
        main(["node", *(["--method", "grace"] if "--method" not in options else []), *options])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1
    assert re.search(message, err[0]), err
    assert not (tmp_path / "D").exists()


def test_cli_resume_of_a_folder_without_checkpoints_is_refused(tmp_path, capsys):
    graph = tmp_path / "g.npz"
    write_npz(community_graph(), graph)
    (tmp_path / "empty").mkdir()
    args = ["node", "--dataset", str(graph), "--method", "grace", "--seeds", "2"]
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--save", str(tmp_path / "empty"), "--resume"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert "holds no seed_<k>/checkpoint.pt of seeds 0 to 1 to resume from" in err


def test_the_graph_is_hashed_only_where_a_run_is_saved_or_resumed(tmp_path, monkeypatch):
    """Every run keeps what continues it; what identifies it (a digest of the graph's bytes)
    is computed where a checkpoint is written or read, not by every run."""
    from cl2gnn.node.training import checkpoint as checkpoint_module

    hashed = []
    real = checkpoint_module.graph_digest
    monkeypatch.setattr(
        checkpoint_module, "graph_digest", lambda data: hashed.append(1) or real(data)
    )
    result = train("grace", 2)
    assert hashed == []
    folder = result.save(tmp_path)
    assert len(hashed) == 1
    state = torch.load(folder / CHECKPOINT, weights_only=True)
    assert state["graph"] == real(community_graph()) and state["epoch"] == 2
