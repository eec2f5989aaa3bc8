"""benchmarks/_shared/runner.py: a long benchmark stopped part-way carries on where it stopped."""

import pytest

from benchmarks._shared.runner import Journal


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


def test_node_classification_merges_its_parts_into_one_row(tmp_path, monkeypatch):
    """The journal's parts of a (graph, method), each a ``cl2gnn node --json`` result, make
    one row: scores joined, mean and std over all of them; the row's seed count in the
    column seeds (their range where its graphs differ, each cell's count then named), one
    seed's score without a spread; the configurations in the table's config field."""
    import json

    from benchmarks._shared import results as _results
    from benchmarks.accuracy import node_classification as nc

    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path / "results")
    baselines = {
        name: {"score_mean": 50.0, "score_std": 0.0, "scores": [50.0]} for name in nc.BASELINES
    }

    def part(method, seed, score):
        result = {"method": method, "protocol": "splits", "metric": "accuracy", "seeds": [seed]}
        result |= {"scores": [score], "score_mean": score, "score_std": 0.0, "epoch_ms": 10.0}
        result |= {"final_loss": 1.0, "peak_rss_mb": 1.0, "config": {"out_channels": 16}}
        return result | ({"baselines": baselines} if method == "grace" else {})

    journal = Journal(tmp_path / "node.jsonl")
    for graph in ("texas", "cornell"):
        journal.add((graph, "grace", 0), part("grace", 0, 70.0))
        journal.add((graph, "grace", 1), part("grace", 1, 80.0))
        journal.add((graph, "bgrl", 0), part("bgrl", 0, 60.0))
    journal.add(("cornell", "bgrl", 1), part("bgrl", 1, 70.0))
    graphs = ["texas", "cornell"]
    nc.write_tables(graphs, ["grace", "bgrl"], journal, "python x.py", {"bgrl": {"epochs": 2}})
    table = json.loads((tmp_path / "results" / "node_classification.json").read_text())
    assert table["columns"][:2] == ["method", "seeds"]
    rows = {row[0]: row[1:] for row in table["rows"]}
    assert rows["grace"] == [2, "75.00 ± 5.00", "75.00 ± 5.00"]
    assert rows["bgrl"] == ["1-2", "60.00 (1 seeds)", "65.00 ± 5.00 (2 seeds)"]
    assert rows["raw features"] == [2, "50.00 ± 0.00", "50.00 ± 0.00"]
    assert rows["target for grace (see the notes)"] == [None, "met", "met"]
    assert table["config"] == {
        "overrides": {"bgrl": {"epochs": 2}},
        "configurations": {"texas, cornell": {"out_channels": 16}},
    }
    journal = Journal(tmp_path / "one.jsonl")  # every row of one seed
    journal.add(("texas", "grace", 0), part("grace", 0, 70.0))
    journal.add(("texas", "bgrl", 0), part("bgrl", 0, 60.0))
    nc.write_tables(["texas"], ["grace", "bgrl"], journal, "python x.py", {})
    table = json.loads((tmp_path / "results" / "node_classification.json").read_text())
    rows = {row[0]: row[1:] for row in table["rows"]}
    assert rows["grace"] == [1, "70.00"] and rows["bgrl"] == [1, "60.00"]


def test_node_classification_keeps_the_earlier_rows_of_methods_not_in_the_journal(
    tmp_path, monkeypatch
):
    """A method re-measured replaces its row; one without parts, and the baselines and target
    rows of a first method without parts, keep the earlier table's rows, labelled with the
    date they were measured, and the table names the run that measured them; so does the
    time table."""
    import json

    from benchmarks._shared import results as _results
    from benchmarks.accuracy import node_classification as nc

    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(nc, "protocol_seeds", lambda graph: 10)  # texas's: no data read
    columns = ["method", "seeds", "texas (splits, accuracy)"]
    earlier = [[name, 10, "50.00 ± 1.00"] for name in nc.BASELINES]
    earlier += [["default (cca_ssg)", 10, "80.00 ± 2.00"], ["grace", 1, "70.00"]]
    earlier += [["target for default (see the notes)", None, "met"]]
    earlier += [["default minus its untrained encoder", None, "+30.00"]]
    config = {"configurations": {"texas": {"hidden": 16}}}
    times = [["default", 10, 5], ["grace", 1, 7]]
    for name, rows, cols in (
        ("node_classification", earlier, columns),
        ("node_classification_time", times, ["method", "seeds", "texas"]),
    ):
        _results.save_table(name, "Speed", "t", cols, rows, command="c", config=config)
    old = json.loads((tmp_path / "results" / "node_classification.json").read_text())["date"]
    part = {"method": "grace", "protocol": "splits", "metric": "accuracy", "seeds": [0]}
    part |= {"scores": [60.0], "score_mean": 60.0, "score_std": 0.0, "epoch_ms": 9.0}
    part |= {"final_loss": 1.0, "peak_rss_mb": 1.0, "config": {"hidden": 8}}
    journal = Journal(tmp_path / "node.jsonl")
    journal.add(("texas", "grace", 0), part)
    nc.write_tables(["texas"], ["default", "grace"], journal, "python x.py", {})
    table = json.loads((tmp_path / "results" / "node_classification.json").read_text())
    rows = {row[0]: row[1:] for row in table["rows"]}
    label = f" (measured {old})"
    assert rows[f"raw features{label}"] == [10, "50.00 ± 1.00"]
    assert rows[f"default (cca_ssg){label}"] == [10, "80.00 ± 2.00"]
    assert rows[f"target for default (see the notes){label}"] == [None, "met"]
    assert rows["grace"] == [1, "60.00"]  # measured now
    assert table["config"]["configurations"] == {"texas": {"hidden": 16}}
    assert table["command"] == "python x.py" and table["earlier"][old]["command"] == "c"
    times = json.loads((tmp_path / "results" / "node_classification_time.json").read_text())
    assert times["rows"] == [[f"default{label}", 10, 5], ["grace", 1, 9]]
    assert times["earlier"][old]["command"] == "c"


def test_node_select_ranks_earlier_rows_with_the_measured_candidates(tmp_path, monkeypatch):
    """A candidate without records keeps its earlier row (labelled with its date) and its
    scores, read off the cell, take part in the ranking: tied means share their ranks."""
    import json

    from benchmarks._shared import results as _results
    from benchmarks.decisions import node_select as ns

    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path / "results")
    columns = ["candidate", "texas", "cornell", "mean validation rank"]
    rows = [["a", "80.0 / 70.0 ± 1.0", "60.0 / 50.0 ± 1.0", 1.0]]
    rows += [["b (kept)", "70.0 / 65.0 ± 1.0", "60.0 / 55.0 ± 1.0", 2.0]]
    _results.save_table("sel", "Node classification", "t", columns, rows, command="c")
    journal = Journal(tmp_path / "sel.jsonl")
    for graph, validation in (("texas", 90.0), ("cornell", 50.0)):
        record = {"candidate": "c", "dataset": graph, "validation": [validation], "test": [1.0]}
        journal.add(("c", graph), record)
    candidates = [{"name": n, "method": "grace"} for n in ("a", "b (kept)", "c", "d")]
    ns.table(candidates, ["texas", "cornell"], 1, tmp_path / "sel.jsonl", "sel", "cmd")
    table = json.loads((tmp_path / "results" / "sel.json").read_text())
    ranks = {row[0].split(" (")[0]: row[-1] for row in table["rows"]}
    assert ranks == {"a": 1.75, "b": 2.25, "c": 2.0}  # texas: c, a, b; cornell: a = b, c
    assert table["rows"][1][0].startswith("b (kept) (measured ")
