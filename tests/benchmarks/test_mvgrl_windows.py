"""The MVGRL windows table: per graph, the seeds both variants ran, their difference in
pooled standard deviations."""

from __future__ import annotations

import json
import math

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


def test_the_difference_is_divided_by_the_pooled_std(tmp_path):
    # variances 4 and 1: pooled std sqrt(2.5), the difference +2 is +1.26 of it; on actor
    # both variants score alike on every seed: no std to divide by, a dash
    for seed, (windows, whole) in enumerate([(79.0, 78.0), (83.0, 80.0)]):
        write_cell(tmp_path, "Cora", "windows", seed, windows)
        write_cell(tmp_path, "Cora", "whole", seed, whole)
        write_cell(tmp_path, "actor", "windows", seed, 31.0)
        write_cell(tmp_path, "actor", "whole", seed, 30.0)
    rows = {row[0]: row for row in mvgrl_windows.rows(mvgrl_windows.read_cells(tmp_path))}
    cora, actor = rows["Cora"], rows["actor"]
    assert cora[2:6] == ["81.00 ± 2.00", "79.00 ± 1.00", "+2.00", f"{2 / math.sqrt(2.5):+.2f}"]
    assert cora[5] == "+1.26"
    assert actor[2:6] == ["31.00 ± 0.00", "30.00 ± 0.00", "+1.00", "—"]


def test_a_file_that_is_not_a_cell_is_refused(tmp_path):
    (tmp_path / "notes.json").write_text("{}")
    with pytest.raises(ValueError, match=r"notes\.json: not a G_<windows\|whole>_seedK\.json"):
        mvgrl_windows.read_cells(tmp_path)
