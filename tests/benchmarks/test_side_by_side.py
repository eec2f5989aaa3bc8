"""The side-by-side table (``benchmarks/reproduce/side_by_side.py``) from a tiny folder of
``cl2gnn node --json`` files and a tiny file of the authors' records: the seeds both sides
share, the difference in pooled standard deviations as its notes define it, and a dash for a
missing side."""

import json
import sys

import numpy as np
import pytest

from benchmarks._shared import results as _results

from ._scripts import load


def library_run(folder, name, method, graph, seeds, scores, normalised=True, raw=None):
    result = {
        "method": method,
        "dataset": graph,
        "seeds": seeds,
        "scores": scores,
        "config": {"normalize_features": normalised},
    }
    if raw is not None:  # --baselines
        result["baselines"] = {"raw features": {"scores": raw}}
    (folder / name).write_text(json.dumps(result))


def authors_line(method, graph, seed, probe, own, features="NormalizeFeatures", **extra):
    record = {
        "method": method,
        "dataset": graph,
        "seed": seed,
        "library_probe": probe,
        "authors_eval": own,
        "config": {"features": features},
        **extra,
    }
    return json.dumps(record)


@pytest.fixture
def inputs(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    # dgi on texas: seeds 0, 1 in one file, 2 and 3 in others; the authors ran 0, 1, 2
    library_run(runs, "dgi_texas_a.json", "dgi", "texas", [0, 1], [60.0, 62.5], raw=[80.0, 84.0])
    library_run(runs, "dgi_texas_seed2.json", "dgi", "texas", [2], [61.0], raw=[83.0])
    library_run(runs, "dgi_texas_seed3.json", "dgi", "texas", [3], [99.0], raw=[1.0])
    # gca on Cora, raw features: the library's side only
    library_run(runs, "gca_raw.json", "gca", "Cora", [0, 1], [80.0, 81.0], normalised=False)
    lines = [
        authors_line("dgi", "texas", 0, 55.0, 70.0),
        authors_line("dgi", "texas", 1, 58.0, 71.0),
        authors_line("dgi", "texas", 2, 57.5, 72.0),
        authors_line("dgi", "texas", 4, 10.0, 10.0),  # a seed the library did not run
        authors_line("dgi", "texas", 3, 0.0, 0.0, smoke=True),  # a smoke run: left out
        # gca on Cora, their NormalizeFeatures: the authors' side only
        authors_line("gca", "Cora", 0, 75.0, 77.0),
        authors_line("gca", "Cora", 1, 76.0, 78.0),
    ]
    authors = tmp_path / "authors.jsonl"
    authors.write_text("\n".join(lines) + "\n")
    return runs, authors


def by_key(rows, columns):
    return {tuple(r[:3]): dict(zip(columns, r, strict=True)) for r in rows}


def test_the_difference_is_in_pooled_population_stds_over_the_shared_seeds(inputs):
    side = load("side_by_side")
    rows = by_key(side.table([inputs[0]], inputs[1]), side.COLUMNS)
    dgi = rows["dgi", "texas", "row-normalised"]
    ours = np.array([60.0, 62.5, 61.0], dtype=np.float64)  # seeds 0, 1, 2: not 3
    theirs = np.array([55.0, 58.0, 57.5], dtype=np.float64)  # not seed 4, not the smoke run
    pooled = np.sqrt((ours.std(ddof=0) ** 2 + theirs.std(ddof=0) ** 2) / 2)
    difference = ours.mean() - theirs.mean()
    assert dgi["seeds"] == "0,1,2"
    assert dgi["cl2gnn"] == f"{ours.mean():.2f} ± {ours.std(ddof=0):.2f}"
    assert dgi["authors' code"] == f"{theirs.mean():.2f} ± {theirs.std(ddof=0):.2f}"
    assert dgi["difference"] == f"{difference:+.2f}"
    assert dgi["difference / pooled std"] == f"{difference / pooled:+.2f}"
    assert abs(difference / pooled) > 1 and dgi["verdict"] == "not within"
    own = np.array([70.0, 71.0, 72.0], dtype=np.float64)
    assert dgi["authors' own evaluation"] == f"{own.mean():.2f} ± {own.std(ddof=0):.2f}"
    raw = np.array([80.0, 84.0, 83.0], dtype=np.float64)  # the library's baseline, seeds 0-2
    assert dgi["raw features"] == f"{raw.mean():.2f} ± {raw.std(ddof=0):.2f}"


def test_a_missing_side_is_a_dash_and_the_other_side_keeps_its_seeds(inputs):
    side = load("side_by_side")
    rows = by_key(side.table([inputs[0]], inputs[1]), side.COLUMNS)
    library_only = rows["gca", "Cora", "raw"]
    assert library_only["authors' code"] == "—" and library_only["cl2gnn"] == "80.50 ± 0.50"
    assert library_only["raw features"] == "—"  # run without --baselines
    authors_only = rows["gca", "Cora", "row-normalised"]
    assert authors_only["cl2gnn"] == "—" and authors_only["authors' code"] == "75.50 ± 0.50"
    for only in (library_only, authors_only):
        assert only["seeds"] == "0,1 (one side only)"
        assert only["difference"] == only["difference / pooled std"] == only["verdict"] == "—"


def test_within_one_pooled_std_is_within_and_beyond_it_is_not():
    side = load("side_by_side")  # both sides' std 1.0: the pooled std 1.0
    assert side.compare([70.0, 72.0], [70.5, 72.5]) == ("-0.50", "-0.50", "within 1 std")
    assert side.compare([70.0, 72.0], [69.0, 71.0]) == ("+1.00", "+1.00", "within 1 std")
    assert side.compare([70.0, 72.0], [68.5, 70.5]) == ("+1.50", "+1.50", "not within")
    assert side.compare([70.0], [71.0]) == ("-1.00", "—", "one seed: no std")


def test_a_difference_that_rounds_to_zero_has_no_sign():
    """The authors' records keep 4 decimals of a score the library's files keep whole."""
    side = load("side_by_side")
    ours, theirs = [64.86486486486487, 59.45945945945946], [64.8649, 59.4595]
    assert side.compare(ours, theirs) == ("+0.00", "+0.00", "within 1 std")
    assert side.compare([70.0, 70.0], [70.00001, 70.00001]) == ("+0.00", "—", "within 1 std")


def test_a_seed_recorded_twice_is_refused(inputs):
    side = load("side_by_side")
    runs, authors = inputs
    authors.write_text(authors.read_text() + authors_line("dgi", "texas", 0, 1.0, 1.0) + "\n")
    with pytest.raises(ValueError, match=r"authors.jsonl:8: seed 0 .* recorded twice"):
        side.table([runs], authors)


def test_the_saved_table_is_under_the_reproduction_topic(inputs, tmp_path, monkeypatch, capsys):
    runs, authors = inputs
    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path / "results")
    argv = ["benchmarks/reproduce/side_by_side.py", "--runs", str(runs), "--authors", str(authors)]
    monkeypatch.setattr(sys, "argv", argv)
    load("side_by_side").main()
    saved = json.loads((tmp_path / "results" / "node_side_by_side.json").read_text())
    assert saved["topic"] == "Reproduction"
    assert saved["command"].startswith("python -m benchmarks.reproduce.side_by_side --runs")
    assert [r[:3] for r in saved["rows"]] == [
        ["gca", "Cora", "raw"],
        ["gca", "Cora", "row-normalised"],
        ["dgi", "texas", "row-normalised"],
    ]
    assert "| dgi | texas | row-normalised | 0,1,2 |" in capsys.readouterr().out


def test_a_variant_of_a_method_is_its_own_row_against_the_same_authors_records(inputs, tmp_path):
    side = load("side_by_side")
    runs, authors = inputs
    variants = tmp_path / "variants"
    variants.mkdir()
    library_run(variants, "v.json", "dgi", "texas", [0, 1, 2], [55.0, 58.0, 57.5])
    result = json.loads((variants / "v.json").read_text())
    (variants / "v.json").write_text(json.dumps({**result, "variant": "views changed"}))
    rows = by_key(side.table([runs, variants], authors), side.COLUMNS)
    variant = rows["dgi (views changed)", "texas", "row-normalised"]
    assert variant["seeds"] == "0,1,2" and variant["cl2gnn"] == variant["authors' code"]
    assert variant["difference"] == "+0.00" and variant["verdict"] == "within 1 std"
    assert rows["dgi", "texas", "row-normalised"]["verdict"] == "not within"  # still there
