"""Method ``auto``: the choice follows the validation scores, reads no test label, works in
mini-batches and chooses alike on every rank, and is what ``cl2gnn node`` runs by default."""

import json

import pytest
import torch
import torch.distributed as dist

from cl2gnn.cli.main import main
from cl2gnn.datasets import contextual_sbm
from cl2gnn.node import NodeConfig, presets, train_node_model
from cl2gnn.node.evaluation import auto as node_auto
from cl2gnn.node.evaluation.auto import choose_method
from cl2gnn.node.training.fit import train_run

from ..distributed.test_scaleout import _join, _spawn

SMALL = dict(out_channels=8, hidden_channels=16, proj_hidden=8, predictor_hidden=8, epochs=15)


def graph_with_splits(seed=0):
    data = contextual_sbm(150, 900, 12, 3, homophily=0.8, feature_signal=0.7, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    order = torch.stack([torch.randperm(150, generator=gen) for _ in range(3)], 1)
    masks = [torch.zeros(150, 3, dtype=torch.bool) for _ in range(3)]
    for split in range(3):
        for mask, rows in zip(masks, order[:, split].split([60, 30, 60]), strict=True):
            mask[rows, split] = True
    data.train_mask, data.val_mask, data.test_mask = masks
    data.name = "a graph nobody published"
    return data


@pytest.fixture
def small_candidates(monkeypatch):
    """Three candidates: two trained, one left at its initialisation (0 epochs)."""
    listed = (
        ("grace", "grace", NodeConfig(**SMALL, learning_rate=0.01)),
        # another width inside: not any other candidate's epoch 0 (checkpoints are candidates)
        ("useless", "grace", NodeConfig(**{**SMALL, "hidden_channels": 12, "epochs": 0})),
        ("cca_ssg", "cca_ssg", NodeConfig(**SMALL, learning_rate=0.01, out_activation=False)),
    )
    monkeypatch.setattr(presets, "CANDIDATES", listed)
    return listed


def test_the_choice_follows_the_validation_scores(small_candidates, monkeypatch):
    data = graph_with_splits()
    choice = choose_method(data, (0, 1))
    assert set(choice.scores) == {
        "grace",
        "useless",
        "cca_ssg",
        "raw features",
        "untrained encoder",
    }
    trained = {k: v for k, v in choice.scores.items() if k in ("grace", "useless", "cca_ssg")}
    assert choice.label == max(trained, key=trained.get)
    assert choice.label != "useless" and trained[choice.label] > trained["useless"]
    assert sorted(choice.results) == [0, 1] and choice.results[0].config == choice.config
    # the chosen candidate's own runs, at the chosen checkpoint, are what later training
    # reuses: the same embeddings
    epoch = choice.epoch
    again = train_run(data, choice.method, choice.config, seed=1, snapshot_at=(epoch,))
    assert torch.equal(again.at_epoch(epoch).embeddings, choice.results[1].embeddings)
    # a candidate made to score higher on validation is chosen instead
    real = node_auto.probe_scores

    def favour_useless(embeddings, y, split, seed, **options):
        scores = real(embeddings, y, split, seed, **options)
        if embeddings.shape[1] == 8 and torch.equal(embeddings, useless[seed]):
            scores["validation"] = 100.0
        return scores

    useless = {
        s: train_node_model(
            data, "grace", small_candidates[1][2], seed=s, progress=False
        ).embeddings
        for s in (0, 1)
    }
    monkeypatch.setattr(node_auto, "probe_scores", favour_useless)
    assert choose_method(data, (0, 1)).label == "useless"


def test_the_choice_reads_no_test_label(small_candidates):
    data = graph_with_splits()
    first = choose_method(data, (0, 1))
    # change the labels of the nodes that are test nodes in both scoring splits (in neither
    # split's training or validation nodes)
    test = (data.test_mask[:, 0] & data.test_mask[:, 1]).nonzero().view(-1)
    assert len(test) > 10
    data.y[test] = (data.y[test[torch.randperm(len(test))]] + 1) % 3
    second = choose_method(data, (0, 1))
    assert second.label == first.label and second.scores == first.scores
    for seed in (0, 1):
        assert torch.equal(first.results[seed].embeddings, second.results[seed].embeddings)


def test_auto_trains_in_mini_batches(small_candidates):
    data = graph_with_splits()
    choice = choose_method(data, (0,), changes={"batch_size": 50})
    assert choice.config.batch_size == 50
    assert all(r.config.batch_size == 50 for r in choice.results.values())


def test_train_node_model_auto_returns_the_chosen_run(small_candidates):
    data = graph_with_splits()
    result = train_node_model(data, "auto", seed=1, progress=False)
    assert result.choice.results[1] is result and result.method.name == result.choice.method
    with pytest.raises(ValueError, match="auto"):
        train_node_model(data, "auto", NodeConfig(), progress=False)


def _auto_worker(rank, world, port, out):
    _join(rank, world, port)
    listed = (
        ("grace", "grace", NodeConfig(**SMALL, learning_rate=0.01)),
        ("graphacl", "graphacl", NodeConfig(**SMALL)),  # does not span ranks: not run
        ("cca_ssg", "cca_ssg", NodeConfig(**SMALL, learning_rate=0.01)),
    )
    presets.CANDIDATES = listed
    try:
        choice = choose_method(graph_with_splits(), (0,), changes={"batch_size": 40})
        torch.save(
            {"label": choice.label, "scores": choice.scores, "skipped": choice.skipped},
            f"{out}/rank{rank}.pt",
        )
    finally:
        dist.destroy_process_group()


def test_every_rank_makes_the_same_choice(tmp_path):
    _spawn(_auto_worker, str(tmp_path))
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert ranks[0] == ranks[1]
    assert ranks[0]["scores"]["graphacl"] is None and "span" in ranks[0]["skipped"]["graphacl"]
    assert ranks[0]["label"] in ("grace", "cca_ssg")


def test_cl2gnn_node_runs_auto_by_default(small_candidates, tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["node", "--seeds", "3", "--epochs", "3", "--no-progress", "--json", str(out)]
    assert main(args) == 0  # --epochs: every candidate's
    result = json.loads(out.read_text())
    assert result["chosen"] in result["candidates"] and result["config"]["epochs"] == 3
    assert set(result["candidates"]) >= {"grace", "useless", "cca_ssg", "raw features"}
    published = "grace (digits-knn's published)"  # a published configuration is a candidate
    assert published in result["candidates"]
    printed = capsys.readouterr().out
    assert printed.index("<- chosen") < printed.index("score (%)")  # before the final score
    named = tmp_path / "named.json"
    args = ["node", "--method", "grace", "--seeds", "1", "--epochs", "2", "--no-progress"]
    assert main([*args, "--json", str(named)]) == 0
    assert "chosen" not in json.loads(named.read_text())


def test_each_candidate_says_its_time_and_score_as_it_finishes(small_candidates, capsys):
    choose_method(graph_with_splits(), (0,), progress=True)
    said = capsys.readouterr()
    lines = [x for x in (said.out + said.err).splitlines() if x.startswith("auto: ")]
    assert [x.split(":")[1].strip() for x in lines] == [c[0] for c in small_candidates]
    assert all(" on validation at epoch " in x and " s for 1 seeds)" in x for x in lines)


def test_a_later_seed_stops_at_the_chosen_epoch_with_the_full_runs_model_there():
    """The seeds after the scoring ones train to the chosen checkpoint and no further: the
    same model as the whole run taken at that epoch (its schedules are the whole run's)."""
    data = graph_with_splits()
    config = NodeConfig(**{**SMALL, "epochs": 8}, lr_cosine=True, learning_rate=0.01)
    whole = train_run(data, "grace", config, seed=2, snapshot_at=(3,)).at_epoch(3)
    stopped = train_run(data, "grace", config, seed=2, stop_after=3)
    assert torch.equal(stopped.embeddings, whole.embeddings)
    assert stopped.losses == whole.losses and len(stopped.losses) == 3
    assert stopped.epoch == whole.epoch == 3
    state = {k: v for k, v in whole.encoder.state_dict().items()}
    assert all(torch.equal(v, state[k]) for k, v in stopped.encoder.state_dict().items())
