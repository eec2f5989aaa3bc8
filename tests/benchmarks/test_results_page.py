"""benchmarks/results_page.py: RESULTS.md (a summary, one row per topic) and one page per
topic, generated from the benchmarks' JSON tables; no table mixes runs."""

import json
import re
import sys
from pathlib import Path

import pytest

from benchmarks import results_page
from benchmarks._shared import headlines
from benchmarks._shared import results as _results

AUTO_COLUMNS = ["graph", "auto", "target"]


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path / "results")
    # a table's command defaults to the process's: a benchmark's here, not pytest's
    script = _results.ROOT / "benchmarks" / "speed" / "loss_kernels.py"
    monkeypatch.setattr(sys, "argv", [str(script), "gemm", "--n", "64"])
    return tmp_path / "results"


def pages_of(results: Path) -> dict[str, str]:
    """The pages by name: RESULTS.md first, then results/<page>.md."""
    pages = results_page.render_pages(results, results.parent / "RESULTS.md")
    return {path.name: text for path, text in pages.items()}


def tables_of(page: str) -> list[tuple[str, list[list[str]]]]:
    """Each Markdown table of ``page`` (after its "Machine: ...; date: ..." line) with its
    rows' cells."""
    found = []
    for block in page.split("\nMachine: ")[1:]:
        header, _, rest = block.partition("\n\n")
        lines = rest.split("\n\n")[0].splitlines()
        rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines[2:]]
        found.append((header.split("; date: ")[1], rows))
    return found


def test_the_summary_comes_first_a_row_per_topic_in_order_each_linking_its_page(results):
    # written in an order that is neither the topics' nor the file names'
    _results.save_table("z_images", "Image SSL", "kNN accuracy", ["run", "acc"], [["a", 0.9]])
    _results.save_table("c_ops", "Operators", "Contract", ["check", "error"], [["align", 1e-16]])
    _results.save_table("a_node", "Node classification", "Cora", ["m", "s"], [["grace", None]])
    pages = pages_of(results)
    assert next(iter(pages)) == "RESULTS.md"
    summary = pages["RESULTS.md"]
    table = summary.split("\n\n")[2].splitlines()  # the title, the preamble, the summary
    assert table[0] == "| topic | headline | read from (table, dates) |"
    topics = [t for t in _results.TOPICS if t in ("Node classification", "Image SSL", "Operators")]
    linked = [re.match(r"\| \[(.+?)\]\((.+?)\)", row).groups() for row in table[2:]]
    assert linked == [
        (_results.TOPICS[t].question, f"results/{_results.TOPICS[t].page}.md") for t in topics
    ]
    assert sorted(pages) == sorted(["RESULTS.md", *(link.split("/")[1] for _, link in linked)])
    assert "Memory at scale" not in summary  # no table, no row and no page
    # a topic's page: its tables, each with its title, command, machine and date
    operators = pages[f"{_results.TOPICS['Operators'].page}.md"]
    assert operators.startswith(f"# {_results.TOPICS['Operators'].question}\n")
    assert "## Contract" in operators and "| align | 1e-16 |" in operators
    assert "Command: `python -m benchmarks.speed.loss_kernels gemm --n 64`" in operators
    assert operators.count("Machine: ") == 1 and "[All results](../RESULTS.md)" in operators


def test_a_headline_is_read_off_its_table_not_typed(results):
    rows = [["Cora (grace, accuracy)", "83.49 ± 0.87", "met"], ["texas", "81.6", "not met"]]
    _results.save_table("node_auto", "Node classification", "auto", AUTO_COLUMNS, rows)
    row = pages_of(results)["RESULTS.md"].split("\n| [Accuracy")[1].splitlines()[0]
    assert "met on 1 of 2 graphs; Cora 83.49 ± 0.87" in row
    assert f"`node_auto`, {_results.saved_table('node_auto')['date']}" in row
    rows[1][2] = "met"  # the table changes: so does its headline
    rows[0][1] = "84.10 ± 0.50"
    _results.save_table("node_auto", "Node classification", "auto", AUTO_COLUMNS, rows)
    assert "met on 2 of 2 graphs; Cora 84.10 ± 0.50" in pages_of(results)["RESULTS.md"]


def test_a_headline_whose_column_is_gone_names_the_table(results):
    columns = ["graph", "auto", "verdict"]
    _results.save_table("node_auto", "Node classification", "auto", columns, [["Cora", "1", "ok"]])
    with pytest.raises(ValueError, match=r"node_auto\.json: no column 'target'"):
        results_page.render_pages(results, results.parent / "RESULTS.md")


def test_every_topic_has_a_headline():
    assert set(headlines.HEADLINES) == set(_results.TOPICS)


def keep_a_row_of_an_earlier_run(name: str, date: str):
    """Run 1 (``date``: the JSON is dated back) measured a and b; run 2 measures b only and
    keeps a's row, as node_classification.py does for a method it did not run."""
    _results.save_table(name, "Speed", "t", ["method", "ms"], [["a", 1], ["b", 2]], command="one")
    path = _results.RESULTS_DIR / f"{name}.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps(record | {"date": date, "machine": "old box"}))
    kept = _results.earlier_rows(name)["a"]
    _results.save_table(name, "Speed", "t", ["method", "ms"], [kept, ["b", 3]], command="two")
    return json.loads(path.read_text())


def test_save_table_keeps_the_command_and_machine_of_the_run_whose_rows_it_keeps(results):
    record = keep_a_row_of_an_earlier_run("times", "2026-01-02")
    assert record["rows"] == [["a (measured 2026-01-02)", 1], ["b", 3]]
    assert record["command"] == "two"
    assert record["earlier"] == {"2026-01-02": {"command": "one", "machine": "old box"}}
    # a third run keeps both rows: each keeps its own run
    path = results / "times.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"date": "2026-02-03"}))
    kept = _results.earlier_rows("times")
    _results.save_table("times", "Speed", "t", ["method", "ms"], [kept["a"], kept["b"]])
    earlier = json.loads(path.read_text())["earlier"]
    assert earlier["2026-01-02"]["command"] == "one" and earlier["2026-02-03"]["command"] == "two"


def test_a_table_of_two_runs_is_one_table_per_run_under_its_own_command(results):
    record = keep_a_row_of_an_earlier_run("times", "2026-01-02")
    page = pages_of(results)[f"{_results.TOPICS['Speed'].page}.md"]
    assert tables_of(page) == [(record["date"], [["b", "3"]]), ("2026-01-02", [["a", "1"]])]
    assert "Command: `two`  \nMachine: " in page and "Command: `one`  \nMachine: old box;" in page
    assert page.index("Command: `two`") < page.index("Command: `one`")  # newest first
    assert "(measured" not in page


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda r: r.pop("earlier"), "rows measured on 2026-01-02 by no run of earlier"),
        (lambda r: r["rows"].append(["c (measured 2025-12-31)", 4]), "rows measured on 2025-12"),
        (lambda r: r["earlier"]["2026-01-02"].pop("machine"), "the run of 2026-01-02 in earl"),
    ],
)
def test_a_row_of_a_run_the_table_does_not_name_is_refused(results, change, named):
    record = keep_a_row_of_an_earlier_run("times", "2026-01-02")
    change(record)
    (results / "times.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match=rf"times\.json: {named}"):
        results_page.render_pages(results, results.parent / "RESULTS.md")


def test_save_table_refuses_rows_of_a_run_it_cannot_name(results):
    with pytest.raises(ValueError, match="rows measured on 2026-01-02 by no known run"):
        _results.save_table("t", "Speed", "t", ["m"], [["a (measured 2026-01-02)"]])
    assert not results.exists()


def test_rerun_replaces_the_pages_and_a_topic_without_tables_loses_its_page(
    results, tmp_path, monkeypatch
):
    out = tmp_path / "RESULTS.md"
    monkeypatch.setattr(
        sys, "argv", ["results_page.py", "--results", str(results), "--out", str(out)]
    )
    _results.save_table("t", "Scale", "Speed", ["n", "ms"], [[1, 5.0]])
    _results.save_table("u", "Image SSL", "kNN", ["n", "acc"], [[1, 0.5]])
    results_page.main()
    _results.save_table("t", "Scale", "Speed", ["n", "ms"], [[1, 4.0]])  # a re-run
    (results / "u.json").unlink()
    results_page.main()
    page = (results / f"{_results.TOPICS['Scale'].page}.md").read_text()
    assert "| 1 | 4.0 |" in page and "| 1 | 5.0 |" not in page and page.count("## Speed") == 1
    assert not (results / f"{_results.TOPICS['Image SSL'].page}.md").exists()
    assert "Image SSL" not in out.read_text()


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
        results_page.render_pages(results, results.parent / "RESULTS.md")


def test_configurations_stay_in_the_json_beside_the_page(results):
    config = {"Cora": {"out_channels": 128, "drop_edge": [0.2, 0.4]}}
    _results.save_table("cfg", "Scale", "Speed", ["n"], [[1]], notes="short", config=config)
    page = pages_of(results)[f"{_results.TOPICS['Scale'].page}.md"]
    assert json.loads((results / "cfg.json").read_text())["config"] == config
    assert "Configurations: [`cfg.json`](cfg.json), field `config`." in page
    assert "drop_edge" not in page


def test_a_bar_inside_a_cell_does_not_split_it_and_none_is_a_dash(results):
    _results.save_table("t", "Scale", "Speed", ["graph", "x|y", "z"], [["actor", "1|2", None]])
    page = pages_of(results)[f"{_results.TOPICS['Scale'].page}.md"]
    assert "| graph | x\\|y | z |" in page and "| actor | 1\\|2 | — |" in page


def test_a_line_over_300_characters_is_refused_naming_its_file(results):
    _results.save_table("long_notes", "Scale", "Speed", ["n"], [[1]], notes="word " * 200)
    pages = pages_of(results)  # prose notes wrap
    assert max(len(line) for text in pages.values() for line in text.splitlines()) <= 300
    _results.save_table("wide", "Scale", "Speed", ["config"], [["x" * 301]])
    with pytest.raises(ValueError, match=r"wide\.json: a line of 3\d\d characters"):
        pages_of(results)


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("python -m benchmarks.speed.no_such --seeds 3", "benchmarks/speed/no_such.py: no such"),
        ("python benchmarks/node_select.py c.json", "benchmarks/node_select.py: no such script"),
        ("python -m benchmarks.decisions.node_select c.json --max-minutes 9", "--max-minutes"),
        ("python -m benchmarks.speed.loss_kernels gemm --n 1, then the same with --nope", "--nope"),
        ("python -m benchmarks.speed.large_steps profile --steps 2", "profile: no such subcommand"),
        ("cl2gnn node --dataset Cora --hidden-size 4", "cl2gnn --hidden-size: no such option"),
        ("python -m benchmarks.accuracy.image_ssl variants --extra --subsett 9", "--subsett"),
        ("python -m benchmarks.reproduce.node_reproduce table --authors /work/a.json", "outside"),
        ("CL2GNN_DATA=../data python -m benchmarks.accuracy.image_ssl variants", "outside the"),
    ],
)
def test_a_command_today_s_scripts_lack_is_refused(results, command, named):
    _results.save_table("stale", "Scale", "Speed", ["n"], [[1]], command=command)
    with pytest.raises(ValueError, match=rf"stale\.json: the command is not today's: .*{named}"):
        pages_of(results)


def test_an_earlier_run_s_command_is_checked_too(results):
    record = keep_a_row_of_an_earlier_run("times", "2026-01-02")
    record["earlier"]["2026-01-02"]["command"] = "python benchmarks/knn_build.py --k 3"
    (results / "times.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"times\.json: .*benchmarks/knn_build\.py: no such"):
        pages_of(results)


def test_the_commands_options_found_in_today_s_scripts_pass():
    for command in (
        "python -m benchmarks.decisions.node_select benchmarks/configs/default_candidates.json "
        "--splits 3",
        "torchrun --nproc_per_node=2 -m benchmarks.speed.large_end_to_end run --preset products",
        "python -m benchmarks.accuracy.image_ssl variants --dataset digits --extra --subset 64",
        "git worktree add /tmp/before ce9fd04 && python -m benchmarks.speed.node_speed_trees "
        "--trees /tmp/before .",
        "cl2gnn node --dataset Cora --seeds 2",
    ):
        assert results_page.command_problems(command) == []


def test_the_repository_s_pages_are_current_with_a_headline_per_topic_and_no_mixed_table():
    """Every table of benchmarks/results/: a command today's scripts accept (render_pages
    raises otherwise, naming the file), lines of at most 300 characters, a headline in the
    summary for every topic, no table with rows of another run than its own, and the
    committed pages are the generated ones (run ``python -m benchmarks.results_page``)."""
    out = _results.RESULTS_DIR.parent / "RESULTS.md"
    pages = results_page.render_pages(_results.RESULTS_DIR, out)
    summary = pages[out].split("\n\n")[2].splitlines()[2:]
    topics = {json.loads(p.read_text())["topic"] for p in _results.RESULTS_DIR.glob("*.json")}
    assert len(summary) == len(topics)
    assert all(" | — | " not in row and re.search(r"\d", row.split(" | ")[1]) for row in summary)
    for path, text in pages.items():
        assert max(map(len, text.splitlines())) <= results_page.MAX_LINE
        if path != out:  # a topic's page: one command, machine and date above each table
            assert text.count("\n|---") == text.count("\nMachine: ")
        for date, rows in tables_of(text):
            assert not any(_results.MEASURED in row[0] for row in rows), (path, date)
        assert path.read_text() == text, f"{path} is stale: run python -m benchmarks.results_page"


@pytest.mark.parametrize("name", ["../outside", "/tmp/abs", "sage layers, spectral", ""])
def test_save_table_refuses_a_name_that_is_not_a_file_stem(results, name):
    with pytest.raises(ValueError, match="plain file stem"):
        _results.save_table(name, "Scale", "Speed", ["n"], [[1]])
    assert not results.exists() or not any(results.iterdir())


def test_save_table_refuses_nan_cells(results):
    with pytest.raises(ValueError, match="not JSON compliant"):
        _results.save_table("nan", "Scale", "Speed", ["n"], [[float("nan")]])
