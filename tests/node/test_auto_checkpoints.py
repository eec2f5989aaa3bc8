"""The training length as part of auto's choice (issue 57): each candidate is probed at
checkpoints of one run on validation nodes alone, an earlier checkpoint is taken where later
epochs score lower, epoch 0 hands back the untrained encoder labelled so, a trained choice
that ties a baseline does not beat it, ``select_epoch`` gives a named method the same rule
and is off by default, and one rule picks the scoring seeds."""

import json

import pytest
import torch

from cl2gnn.cli.main import main
from cl2gnn.node import NodeConfig, presets, train_node_model
from cl2gnn.node.evaluation import auto as node_auto
from cl2gnn.node.evaluation import experiment
from cl2gnn.node.evaluation.auto import (
    BASELINES,
    RAW,
    UNTRAINED,
    checkpoint_epochs,
    choose_method,
    scoring_seeds,
)
from cl2gnn.node.training.fit import train_run

from .test_auto import SMALL, graph_with_splits

CONFIG = NodeConfig(**{**SMALL, "epochs": 8}, learning_rate=0.01)  # checkpoints 0, 1, 2, 4, 8


def scripted_validation(monkeypatch, by_epoch: dict[int, float], by_method=None, raw=0.0):
    """Make every run's checkpoint at epoch ``e`` score ``by_epoch[e]`` on validation (or
    ``by_method[method][e]``; the raw features ``raw``): the embeddings are recognised as the
    snapshots the runs kept."""
    seen = {}
    real_run = node_auto.train_run

    def recording_run(data, method, *args, **kwargs):
        result = real_run(data, method, *args, **kwargs)
        script = (by_method or {}).get(method, by_epoch)
        seen.update({id(h): script[epoch] for epoch, h in result.snapshots.items()})
        return result

    def scores(embeddings, y, split, seed, **options):
        assert split[2] is None  # no test node is handed to the probe
        return {"validation": seen.get(id(embeddings), raw)}

    monkeypatch.setattr(node_auto, "train_run", recording_run)
    monkeypatch.setattr(node_auto, "probe_scores", scores)


def test_checkpoint_epochs_are_fractions_of_the_run():
    assert checkpoint_epochs(8) == [0, 1, 2, 4, 8]
    assert checkpoint_epochs(500) == [0, 62, 125, 250, 500]
    assert checkpoint_epochs(3) == [0, 1, 3] and checkpoint_epochs(0) == [0]


def test_snapshots_at_epochs_leave_the_run_unchanged():
    data = graph_with_splits()
    plain = train_run(data, "grace", CONFIG, seed=2, progress=False)
    kept = train_run(data, "grace", CONFIG, seed=2, progress=False, snapshot_at=(0, 3, 8))
    assert torch.equal(kept.embeddings, plain.embeddings) and kept.losses == plain.losses
    assert sorted(kept.snapshots) == sorted(kept.encoder_states) == [0, 3, 8]
    assert kept.at_epoch(8) is kept and kept.at_epoch(3).epoch == 3
    with pytest.raises(ValueError, match="snapshot_at"):
        train_run(data, "grace", CONFIG, progress=False, snapshot_at=(9,))
    with pytest.raises(ValueError, match="epoch"):
        kept.at_epoch(2)


def test_the_checkpoint_choice_reads_no_test_label():
    data = graph_with_splits()
    listed = [("grace", "grace", CONFIG), ("cca_ssg", "cca_ssg", CONFIG)]
    first = choose_method(data, (0, 1), listed=listed)
    # the nodes that are test nodes in both scoring splits get other labels
    test = (data.test_mask[:, 0] & data.test_mask[:, 1]).nonzero().view(-1)
    assert len(test) > 10
    data.y[test] = (data.y[test] + 1 + torch.randint(2, test.shape)) % 3
    second = choose_method(data, (0, 1), listed=listed)
    assert second.checkpoints == first.checkpoints and second.scores == first.scores
    assert (second.label, second.epoch) == (first.label, first.epoch)
    assert sorted(first.checkpoints["grace"]) == checkpoint_epochs(8)


def test_a_candidate_that_declines_is_taken_at_the_earlier_checkpoint(monkeypatch):
    data = graph_with_splits()
    scripted_validation(monkeypatch, {0: 50.0, 1: 60.0, 2: 70.0, 4: 65.0, 8: 55.0})
    choice = choose_method(data, (0, 1), listed=[("grace", "grace", CONFIG)])
    assert (choice.label, choice.epoch, choice.trained) == ("grace", 2, True)
    assert choice.scores["grace"] == 70.0 and choice.scores[UNTRAINED] == 50.0
    assert choice.as_dict()["chosen_as"] == "grace at epoch 2 of 8"
    for seed, result in choice.results.items():
        # epoch 2 of the same 8-epoch run: its embeddings, its encoder, its losses
        plain = train_run(data, "grace", CONFIG, seed=seed, progress=False, snapshot_at=(2,))
        assert result.epoch == 2 and result.losses == plain.losses[:2]
        assert torch.equal(result.embeddings, plain.snapshots[2])
        assert not torch.equal(result.embeddings, plain.embeddings)
        assert torch.equal(result.embed(data.x, data.edge_index), plain.snapshots[2])
        assert result.checkpoint is None  # training went on past this encoder


def test_epoch_zero_winning_hands_back_the_untrained_encoder(monkeypatch):
    data = graph_with_splits()
    scripted_validation(monkeypatch, {0: 90.0, 1: 60.0, 2: 70.0, 4: 65.0, 8: 89.0})
    choice = choose_method(data, (0,), listed=[("grace", "grace", CONFIG)])
    assert choice.epoch == 0 and not choice.trained and not choice.beats_baselines
    result = choice.results[0]
    untrained = train_node_model(
        data, "grace", CONFIG.with_overrides(epochs=0), seed=0, progress=False
    )
    assert torch.equal(result.embeddings, untrained.embeddings)
    assert torch.equal(result.embed(data.x, data.edge_index), untrained.embeddings)
    assert result.epoch == 0 and result.losses == []
    described = choice.as_dict()
    assert described["chosen_as"].startswith(UNTRAINED) and not described["training_helped"]
    assert "training did not help" in choice.table()
    # a tie between the untrained and a trained checkpoint goes to the untrained encoder
    # (validation does not show that training helped), within a candidate and across
    # candidates, whichever is listed first; ties among trained checkpoints to the later
    scripted_validation(monkeypatch, {0: 90.0, 1: 60.0, 2: 70.0, 4: 65.0, 8: 90.0})
    assert choose_method(data, (0,), listed=[("grace", "grace", CONFIG)]).epoch == 0
    scripted_validation(monkeypatch, {0: 50.0, 1: 60.0, 2: 90.0, 4: 65.0, 8: 90.0})
    assert choose_method(data, (0,), listed=[("grace", "grace", CONFIG)]).epoch == 8
    untrained_best = {0: 90.0, 1: 60.0, 2: 70.0, 4: 65.0, 8: 80.0}
    trained_best = {0: 50.0, 1: 60.0, 2: 90.0, 4: 65.0, 8: 80.0}
    for first, second in (("grace", "cca_ssg"), ("cca_ssg", "grace")):
        scripted_validation(monkeypatch, {}, {"grace": untrained_best, "cca_ssg": trained_best})
        listed = [(first, first, CONFIG), (second, second, CONFIG)]
        tie = choose_method(data, (0,), listed=listed)
        assert (tie.label, tie.epoch, tie.trained) == ("grace", 0, False)


def test_a_trained_choice_tied_with_the_raw_features_does_not_beat_the_baselines(monkeypatch):
    data = graph_with_splits()
    listed = [("grace", "grace", CONFIG.with_overrides(epochs=2))]  # checkpoints 0, 1, 2
    for raw, beats in ((69.5, True), (70.0, False)):
        scripted_validation(monkeypatch, {0: 50.0, 1: 70.0, 2: 60.0}, raw=raw)
        choice = choose_method(data, (0,), listed=listed)
        assert (choice.epoch, choice.scores["grace"], choice.scores[RAW]) == (1, 70.0, raw)
        assert choice.beats_baselines is beats
    assert "no trained candidate beats the baselines" in choice.table()


def test_the_command_says_when_training_did_not_help(monkeypatch, tmp_path, capsys):
    listed = (("grace", "grace", CONFIG),)
    monkeypatch.setattr(presets, "CANDIDATES", listed)
    monkeypatch.setattr(presets, "GRACE_PUBLISHED", {})
    scripted_validation(monkeypatch, {0: 90.0, 1: 60.0, 2: 70.0, 4: 65.0, 8: 80.0})
    out = tmp_path / "r.json"
    args = ["node", "--seeds", "3", "--baselines", "--no-progress", "--json", str(out)]
    assert main(args) == 0
    result = json.loads(out.read_text())
    assert result["chosen_epoch"] == 0 and not result["training_helped"]
    assert result["chosen_as"].startswith(UNTRAINED)
    printed = capsys.readouterr().out
    assert "training did not help" in printed and f"auto: {UNTRAINED}" in printed
    # every seed, the unscored ones too, is the untrained encoder: the baseline's score
    assert result["scores"] == result["baselines"][UNTRAINED]["scores"]


def test_select_epoch_gives_a_named_method_the_same_rule(monkeypatch):
    data = graph_with_splits()
    plain = train_node_model(data, "grace", CONFIG, seed=1, progress=False)
    again = train_node_model(data, "grace", CONFIG, seed=1, progress=False, select_epoch=False)
    assert plain.choice is None and plain.epoch is None and len(plain.losses) == 8
    assert torch.equal(again.embeddings, plain.embeddings) and again.losses == plain.losses
    scripted_validation(monkeypatch, {0: 50.0, 1: 60.0, 2: 55.0, 4: 75.0, 8: 70.0})
    chosen = train_node_model(data, "grace", CONFIG, seed=1, progress=False, select_epoch=True)
    assert chosen.epoch == 4 and chosen.choice.epoch == 4 and len(chosen.losses) == 4
    with pytest.raises(ValueError, match="select_epoch"):
        train_node_model(data, "grace", CONFIG, select_epoch=True, checkpoint_every=2)


def test_select_epoch_is_off_by_default_in_the_command(monkeypatch, tmp_path):
    scripted_validation(monkeypatch, {0: 50.0, 1: 60.0, 2: 55.0, 4: 75.0, 8: 70.0})
    args = ["node", "--method", "grace", "--seeds", "2", "--epochs", "8", "--no-progress"]
    plain, chosen = tmp_path / "plain.json", tmp_path / "chosen.json"
    assert main([*args, "--json", str(plain)]) == 0
    assert main([*args, "--select-epoch", "--json", str(chosen)]) == 0
    plain, chosen = json.loads(plain.read_text()), json.loads(chosen.read_text())
    assert "chosen_epoch" not in plain and chosen["chosen_epoch"] == 4
    assert sorted(map(int, chosen["checkpoints"])) == checkpoint_epochs(8)


def test_one_rule_for_the_scoring_seeds(monkeypatch):
    data = graph_with_splits()  # 3 splits
    assert scoring_seeds(data, 0) == [0, 1] and scoring_seeds(data, 2) == [2]
    del data.train_mask, data.val_mask, data.test_mask  # the GRACE protocol: any seed
    assert scoring_seeds(data, 5) == [5, 6] == scoring_seeds(data, 5, "grace")
    # the command and train_node_model choose on those seeds, whatever the run's seed count
    asked = []

    def stop(data, seeds, **options):
        asked.append(list(seeds))
        raise RuntimeError("chosen")

    monkeypatch.setattr(experiment, "choose_method", stop)
    with pytest.raises(RuntimeError, match="chosen"):
        experiment.run_experiment("digits-knn", seeds=1, first_seed=3)
    monkeypatch.setattr("cl2gnn.node.api.choose_method", stop)
    with pytest.raises(RuntimeError, match="chosen"):
        train_node_model(graph_with_splits(), "auto", seed=1, progress=False)
    assert asked == [[3, 4], [1, 2]]


def test_the_baseline_labels_are_one_set():
    assert experiment.BASELINES is BASELINES and {RAW, UNTRAINED} <= set(BASELINES)


def test_select_epoch_is_refused_beside_a_stopping_rule():
    """The checkpoints are fractions of a fixed run; a run that stops on its loss may never
    reach them."""
    config = NodeConfig(**SMALL, patience=5)
    with pytest.raises(ValueError, match=r"select_epoch: NodeConfig\.patience=5"):
        train_node_model(graph_with_splits(), "dgi", config, select_epoch=True, progress=False)
