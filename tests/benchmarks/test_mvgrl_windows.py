"""The MVGRL windows table: per graph, the seeds both variants ran, their difference in
pooled standard deviations."""

from __future__ import annotations

import json

import pytest

from benchmarks.decisions import mvgrl_windows


def write_cell(folder, graph, variant, seed, score, epochs=10, epoch_ms=100.0):
    record = {"score_mean": score, "epochs_run": [epochs], "epoch_ms": epoch_ms}
    (folder / f"{graph}_{variant}_seed{seed}.json").write_text(json.dumps(record))


def test_rows_compare_the_variants_on_the_seeds_both_ran(tmp_path):
    for seed, (windows, whole) in enumerate([(80.0, 78.0), (82.0, 80.0)]):
        write_cell(tmp_path, "Cora", "windows", seed, windows, epochs=20)
        write_cell(tmp_path, "Cora", "whole", seed, whole)
    write_cell(tmp_path, "Cora", "windows", 7, 10.0)  # no whole-graph run of seed 7: left out
    write_cell(tmp_path, "actor", "windows", 0, 30.0)  # no seed with both: no row
    (row,) = mvgrl_windows.rows(mvgrl_windows.read_cells(tmp_path))
    # means 81 and 79, each variance 1: pooled std 1, difference +2
    assert row == ["Cora", 2, "81.00 ± 1.00", "79.00 ± 1.00", "+2.00", "+2.00", "20 / 10", "2 / 1"]


def test_a_file_that_is_not_a_cell_is_refused(tmp_path):
    (tmp_path / "notes.json").write_text("{}")
    with pytest.raises(ValueError, match=r"notes\.json: not a G_<windows\|whole>_seedK\.json"):
        mvgrl_windows.read_cells(tmp_path)
