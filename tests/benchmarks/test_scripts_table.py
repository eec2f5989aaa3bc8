"""The one table of the benchmark scripts the tests use (``_scripts.SCRIPTS``) is the
folder's: a script moved, added or removed fails here, naming it, before the tests that
run it fail in ways that do not."""

import pytest

from ._scripts import CONFIGS, PACKAGE, ROOT, SCRIPTS, load


def test_the_table_holds_every_benchmark_file_and_only_those():
    on_disk = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "benchmarks").rglob("*.py")
        if p.name != "__init__.py"
    }
    assert sorted(on_disk - set(SCRIPTS.values())) == []  # a file the table misses
    assert sorted(set(SCRIPTS.values()) - on_disk) == []  # a line naming no file
    assert all((ROOT / config).is_file() for config in CONFIGS.values())


@pytest.mark.skipif(PACKAGE, reason="the scripts import each other by dotted name")
def test_a_name_is_its_files_stem():
    """A script's bare ``import _results`` finds the file whose stem it names."""
    assert [name for name, path in SCRIPTS.items() if path.rsplit("/", 1)[-1][:-3] != name] == []


def test_a_helper_is_one_module_for_the_scripts_and_the_tests():
    """What a test patches in a helper (``_results.RESULTS_DIR``) is what the scripts read."""
    assert load("fullgraph_step").rss_mb.__globals__ is vars(load("_results"))
