"""benchmarks/results_page.py: RESULTS.md generated from the benchmarks' JSON tables."""

import json
import sys

import pytest

from ._scripts import CONFIGS, SCRIPTS, load, path, script_command

_results = load("_results")
results_page = load("results_page")


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path / "results")
    # a table's command defaults to the process's: a benchmark's here, not pytest's
    monkeypatch.setattr(sys, "argv", [str(path("loss_kernels")), "gemm", "--n", "64"])
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
        command=f"{script_command('node_select')} c.json",
    )
    _results.save_table("a_node", "Node classification", "Cora", ["m", "s"], [["grace", None]])
    _results.save_table("c_ops", "Operators", "Contract", ["check", "error"], [["align", 1e-16]])
    page = results_page.render_page(results)
    headings = [f"## {_results.TOPICS[t]}" for t in ("Node classification", "Image SSL")]
    headings.append(f"## {_results.TOPICS['Operators']}")
    order = [page.index(h) for h in headings]
    assert order == sorted(order)  # the questions in TOPICS' order
    assert f"## {_results.TOPICS['Scale']}" not in page  # no table, no section
    # within a topic, by file name; every table with its title, command, machine, date, notes
    assert page.index("### Cora") < page.index("### Heterophilous")
    assert f"Command: `{script_command('node_select')} c.json`" in page
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


def test_configurations_stay_in_the_json_beside_the_table(results):
    config = {"Cora": {"out_channels": 128, "drop_edge": [0.2, 0.4]}}
    _results.save_table("cfg", "Scale", "Speed", ["n"], [[1]], notes="short", config=config)
    page = results_page.render_page(results)
    assert json.loads((results / "cfg.json").read_text())["config"] == config
    assert "Configurations: `results/cfg.json`, field `config`." in page
    assert "drop_edge" not in page


def test_a_line_over_300_characters_is_refused_naming_its_file(results):
    _results.save_table("long_notes", "Scale", "Speed", ["n"], [[1]], notes="word " * 200)
    page = results_page.render_page(results)  # prose notes wrap
    assert max(map(len, page.splitlines())) <= results_page.MAX_LINE
    _results.save_table("wide", "Scale", "Speed", ["config"], [["x" * 301]])
    with pytest.raises(ValueError, match=r"wide\.json: a line of 3\d\d characters"):
        results_page.render_page(results)


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("python benchmarks/no_such.py --seeds 3", "benchmarks/no_such.py: no such script"),
        (f"{script_command('node_select')} c.json --max-minutes 9", "--max-minutes: no such"),
        (f"{script_command('loss_kernels')} gemm --n 1, then the same with --nope", "--nope: no"),
        (f"{script_command('large_steps')} profile --steps 2", "profile: no such subcommand"),
        ("cl2gnn node --dataset Cora --hidden-size 4", "cl2gnn --hidden-size: no such option"),
        (f"{script_command('image_ssl')} variants --extra --subsett 9", "--subsett: no such"),
        (f"{script_command('node_reproduce')} table --authors /work/a.json", "outside the"),
        (f"CL2GNN_DATA=../data {script_command('image_ssl')} variants", "outside the"),
    ],
)
def test_a_command_today_s_scripts_lack_is_refused(results, command, named):
    _results.save_table("stale", "Scale", "Speed", ["n"], [[1]], command=command)
    with pytest.raises(ValueError, match=rf"stale\.json: the command is not today's: .*{named}"):
        results_page.render_page(results)


def test_the_commands_options_found_in_today_s_scripts_pass():
    for command in (
        f"{script_command('node_select')} {CONFIGS['default_candidates']} --splits 3",
        f"torchrun --nproc_per_node=2 {SCRIPTS['large_end_to_end']} run --preset products",
        f"{script_command('image_ssl')} variants --dataset digits --extra --subset 64",
        f"git worktree add /tmp/before ce9fd04 && {script_command('node_speed_trees')} --trees "
        "/tmp/before .",
        "cl2gnn node --dataset Cora --seeds 2",
    ):
        assert results_page.command_problems(command) == []


def test_the_repository_s_page_is_current():
    """Every table of benchmarks/results/: lines of at most 300 characters, a command that
    today's scripts accept (render_page raises otherwise, naming the file)."""
    page = results_page.render_page(_results.RESULTS_DIR)
    assert max(map(len, page.splitlines())) <= results_page.MAX_LINE


@pytest.mark.parametrize("name", ["../outside", "/tmp/abs", "sage layers, spectral", ""])
def test_save_table_refuses_a_name_that_is_not_a_file_stem(results, name):
    with pytest.raises(ValueError, match="plain file stem"):
        _results.save_table(name, "Scale", "Speed", ["n"], [[1]])
    assert not results.exists() or not any(results.iterdir())


def test_save_table_refuses_nan_cells(results):
    with pytest.raises(ValueError, match="not JSON compliant"):
        _results.save_table("nan", "Scale", "Speed", ["n"], [[float("nan")]])
