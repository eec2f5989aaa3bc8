"""benchmarks/results_page.py: RESULTS.md generated from the benchmarks' JSON tables."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _results
import results_page


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path / "results")
    return tmp_path / "results"


def test_page_groups_tables_by_topic_in_order(results, tmp_path):
    # written in an order that is neither the topics' nor the file names'
    _results.save_table("z_images", "Image SSL", "kNN accuracy", ["run", "acc"], [["a", 0.9]])
    _results.save_table(
        "b_node",
        "Node classification",
        "Heterophilous",
        ["graph", "x|y"],
        [["actor", "1|2"]],
        notes="validation ranks",
        command="python benchmarks/node_select.py c.json",
    )
    _results.save_table("a_node", "Node classification", "Cora", ["m", "s"], [["grace", None]])
    _results.save_table("c_ops", "Operators", "Contract", ["check", "error"], [["align", 1e-16]])
    page = results_page.render_page(results)
    order = [page.index(h) for h in ("## Operators", "## Node classification", "## Image SSL")]
    assert order == sorted(order) and "## Scale" not in page  # no table, no section
    # within a topic, by file name; every table with its title, command, machine, date, notes
    assert page.index("### Cora") < page.index("### Heterophilous")
    assert "Command: `python benchmarks/node_select.py c.json`" in page
    assert page.count("Machine: ") == 4 and page.count("date: ") == 4
    assert "validation ranks" in page
    assert "| actor | 1\\|2 |" in page  # a | inside a cell does not split it
    assert "| grace | — |" in page and "| align | 1e-16 |" in page


def test_rerun_replaces_the_page_and_a_table(results, tmp_path, monkeypatch):
    out = tmp_path / "RESULTS.md"
    monkeypatch.setattr(
        sys, "argv", ["results_page.py", "--results", str(results), "--out", str(out)]
    )
    _results.save_table("t", "Scale", "Speed", ["n", "ms"], [[1, 5.0]])
    results_page.main()
    _results.save_table("t", "Scale", "Speed", ["n", "ms"], [[1, 4.0]])  # a re-run
    results_page.main()
    page = out.read_text()
    assert "| 1 | 4.0 |" in page and "| 1 | 5.0 |" not in page
    assert page.count("### Speed") == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("machine"), "missing key"),
        (lambda r: r.update(topic="Vision"), "topic"),
        (lambda r: r["rows"].append([1]), "one cell per column"),
        (lambda r: r["rows"].append([2, float("nan")]), "NaN is not a number"),
    ],
)
def test_a_bad_table_names_its_file(results, change, message):
    path = _results.save_table("bad", "Scale", "Speed", ["n", "ms"], [[1, 5.0]])
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=rf"bad\.json: .*{message}"):
        results_page.render_page(results)


@pytest.mark.parametrize("name", ["../outside", "/tmp/abs", "sage layers, spectral", ""])
def test_save_table_refuses_a_name_that_is_not_a_file_stem(results, name):
    with pytest.raises(ValueError, match="plain file stem"):
        _results.save_table(name, "Scale", "Speed", ["n"], [[1]])
    assert not results.exists() or not any(results.iterdir())


def test_save_table_refuses_nan_cells(results):
    with pytest.raises(ValueError, match="not JSON compliant"):
        _results.save_table("nan", "Scale", "Speed", ["n"], [[float("nan")]])
