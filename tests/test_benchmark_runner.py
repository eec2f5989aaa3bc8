"""benchmarks/_runner.py: a long benchmark stopped part-way carries on where it stopped."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _runner import Journal


def tasks(measured: list, keys=("a", "b", "c")):
    def measure(key):
        measured.append(key)
        return {"value": key * 2}

    return [((key, 1), lambda key=key: measure(key)) for key in keys]


def test_a_second_run_measures_only_what_the_first_left(tmp_path):
    path, measured = tmp_path / "runs" / "journal.jsonl", []
    journal = Journal(path)
    with pytest.raises(KeyboardInterrupt):  # stopped while measuring "b"
        journal.run(
            [*tasks(measured, "a"), (("b", 1), lambda: (_ for _ in ()).throw(KeyboardInterrupt))]
        )
    assert measured == ["a"]
    again = Journal(path)
    assert ("a", 1) in again and ("b", 1) not in again and again[("a", 1)] == {"value": "aa"}
    assert again.run(tasks(measured)) == 2 and measured == ["a", "b", "c"]
    assert Journal(path).items() == [
        (("a", 1), {"value": "aa"}),
        (("b", 1), {"value": "bb"}),
        (("c", 1), {"value": "cc"}),
    ]


def test_a_line_cut_short_is_measured_again_and_replaced(tmp_path):
    path, measured = tmp_path / "journal.jsonl", []
    Journal(path).run(tasks(measured, "a"))
    with open(path, "a") as file:
        file.write('{"key": ["b", 1], "val')  # the process died while writing
    journal = Journal(path)
    assert len(journal) == 1
    journal.run(tasks(measured, "bc"))
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and all(line.startswith('{"key"') for line in lines)
    assert len(Journal(path)) == 3 and measured == ["a", "b", "c"]


def test_a_damaged_line_before_the_last_names_the_file_and_line(tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text('{"key": ["a"], "value": {}}\nnot json\n{"key": ["b"], "value": {}}\n')
    with pytest.raises(ValueError, match=r"journal\.jsonl: line 2 is not a journal entry"):
        Journal(path)
