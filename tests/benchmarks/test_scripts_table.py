"""The one table of the benchmark scripts the tests use (``_scripts.SCRIPTS``) is the
folder's: a script moved, added or removed fails here, naming it, before the tests that
run it fail in ways that do not."""

from ._scripts import CONFIGS, ROOT, SCRIPTS, load


def test_the_table_holds_every_benchmark_file_and_only_those():
    on_disk = {str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks").rglob("*.py")}
    assert sorted(on_disk - set(SCRIPTS.values())) == []  # a file the table misses
    assert sorted(set(SCRIPTS.values()) - on_disk) == []  # a line naming no file
    assert all((ROOT / config).is_file() for config in CONFIGS.values())


def test_a_name_is_its_files_stem():
    """A bare ``import _results`` in a script finds the file whose stem it names."""
    assert [name for name, path in SCRIPTS.items() if path.rsplit("/", 1)[-1][:-3] != name] == []


def test_a_helper_loaded_twice_is_one_module():
    """The scripts' bare imports and the tests' ``load`` share one module, so that what a
    test patches in it (``_results.RESULTS_DIR``) is what the script reads."""
    import _results  # resolved by the table's finder, not through sys.path

    assert load("_results") is _results
    assert _results.__file__ == str(ROOT / SCRIPTS["_results"])
