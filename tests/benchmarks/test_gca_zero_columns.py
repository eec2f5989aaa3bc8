"""The GCA zero-column table: per row, the seeds both rules ran, their difference in pooled
standard deviations, and cells whose configuration is not the rule their name says refused."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.decisions import gca_zero_columns

CONFIG = {"encoder": "gcn", "embedding": "last", "normalize_features": True}


def write_cell(folder, row, rule, seed, score, dataset="Cora", config_rule=None):
    config = {**CONFIG, "zero_columns": config_rule or rule}
    record = {"dataset": dataset, "score_mean": score, "config": config}
    (folder / f"{row}_{rule}_seed{seed}.json").write_text(json.dumps(record))


def test_rows_compare_the_rules_on_the_seeds_both_ran(tmp_path):
    for seed, (itself, every) in enumerate([(81.0, 74.0), (83.0, 76.0)]):
        write_cell(tmp_path, "Cora", "itself", seed, itself)
        write_cell(tmp_path, "Cora", "every_column", seed, every)
    write_cell(tmp_path, "Cora", "itself", 7, 10.0)  # no every-column run of seed 7: left out
    write_cell(tmp_path, "texas", "itself", 0, 60.0, "texas")  # no seed with both: no row
    (row,) = gca_zero_columns.rows(gca_zero_columns.read_cells(tmp_path))
    # means 82 and 75, each variance 1: pooled std 1, difference +7
    expected = ["Cora", "gcn, last read-out, row-normalised features", 2]
    assert row == [*expected, "82.00 ± 1.00", "75.00 ± 1.00", "+7.00", "+7.00"]


def test_the_difference_is_divided_by_the_pooled_std(tmp_path):
    # variances 4 and 1: pooled std sqrt(2.5), the difference +7 is +4.43 of it; on texas
    # both rules score alike on every seed: no std to divide by, a dash
    for seed, (itself, every) in enumerate([(80.0, 74.0), (84.0, 76.0)]):
        write_cell(tmp_path, "Cora", "itself", seed, itself)
        write_cell(tmp_path, "Cora", "every_column", seed, every)
        write_cell(tmp_path, "texas", "itself", seed, 61.0, "texas")
        write_cell(tmp_path, "texas", "every_column", seed, 60.0, "texas")
    rows = {row[0]: row for row in gca_zero_columns.rows(gca_zero_columns.read_cells(tmp_path))}
    cora, texas = rows["Cora"], rows["texas"]
    assert cora[3:] == ["82.00 ± 2.00", "75.00 ± 1.00", "+7.00", f"{7 / math.sqrt(2.5):+.2f}"]
    assert cora[-1] == "+4.43"
    assert texas[3:] == ["61.00 ± 0.00", "60.00 ± 0.00", "+1.00", "—"]


def test_a_cell_whose_configuration_is_the_other_rule_is_refused(tmp_path):
    write_cell(tmp_path, "Cora", "every_column", 0, 80.0, config_rule="itself")
    with pytest.raises(ValueError, match=r"Cora_every_column_seed0\.json: its configuration's"):
        gca_zero_columns.read_cells(tmp_path)


def test_a_file_that_is_not_a_cell_is_refused(tmp_path):
    (tmp_path / "notes.json").write_text("{}")
    with pytest.raises(ValueError, match=r"notes\.json: not a ROW_<itself\|every_column>_seedK"):
        gca_zero_columns.read_cells(tmp_path)
