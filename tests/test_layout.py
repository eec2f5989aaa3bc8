"""The tests mirror the package: every package folder of ``cl2gnn/`` (its first level) has
a tests folder of the same name, every tests folder is a package folder's or is listed
here with its reason, and every listing is still true. Inside a folder a file is named
after what it tests; the top level holds the tests that span folders. No test reaches a
folder of the repository through ``sys.path`` (the benchmark scripts are imported by path:
tests/benchmarks/_scripts.py)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

# package folder -> why it has no tests folder of its name
WITHOUT_TESTS_FOLDER: dict[str, str] = {}
# tests folder -> why no package folder has its name
WITHOUT_PACKAGE_FOLDER = {
    "benchmarks": "the benchmark scripts' tests: benchmarks/ is beside the package",
    "reliability": "an adversarial user's inputs, across the package, each in a forked child",
}
# a call or a child's code that puts a folder on sys.path
SYS_PATH_CODE = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*(\+?=|\[)")


def package_folders(root: Path) -> set[str]:
    return {p.parent.name for p in root.glob("*/__init__.py")}


def test_every_package_folder_has_its_tests_folder():
    missing = package_folders(ROOT / "cl2gnn") - package_folders(TESTS)
    assert sorted(missing - set(WITHOUT_TESTS_FOLDER)) == []


def test_every_tests_folder_mirrors_a_package_folder():
    extra = package_folders(TESTS) - package_folders(ROOT / "cl2gnn")
    assert sorted(extra - set(WITHOUT_PACKAGE_FOLDER)) == []


def test_every_listed_exception_is_still_one():
    """An entry outlives its reason when the folder it excuses is gone or mirrored."""
    packages, tests = package_folders(ROOT / "cl2gnn"), package_folders(TESTS)
    assert sorted(set(WITHOUT_TESTS_FOLDER) - (packages - tests)) == []
    assert sorted(set(WITHOUT_PACKAGE_FOLDER) - (tests - packages)) == []


def test_every_folder_of_tests_is_a_package():
    """The tests import their neighbours relatively (``from ..conftest import ...``), and two
    folders may hold files of one name: both need an ``__init__.py`` in every folder."""
    folders = {p.parent for p in TESTS.rglob("test_*.py")}
    assert sorted(str(f) for f in folders if not (f / "__init__.py").is_file()) == []


def sys_path_lines(source: str) -> list[int]:
    """The lines of ``source`` that put a folder on ``sys.path``: a call to
    ``sys.path.insert`` and its like, ``monkeypatch.syspath_prepend`` of anything but a
    temporary folder, or a child's code doing the same."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            call = ast.unparse(node)
            prepend = ast.unparse(node.func).endswith("syspath_prepend")
            if SYS_PATH_CODE.search(call) or (prepend and "tmp_path" not in call):
                lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if SYS_PATH_CODE.search(node.value):
                lines.append(node.lineno)
    return sorted(set(lines))


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('sys.path.insert(0, str(ROOT / "benchmarks"))', [1]),
        ('monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))', [1]),
        ("code = \"import sys\\nsys.path.append('benchmarks')\"", [1]),
        ("monkeypatch.syspath_prepend(str(tmp_path))", []),
        ('"""Not on ``sys.path``: by path."""', []),
    ],
)
def test_the_sys_path_check_finds_what_it_must(source, found):
    assert sys_path_lines(source) == found


def test_no_test_puts_a_folder_of_the_repository_on_sys_path():
    """(This file's own cases above excepted.)"""
    found = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__) and (lines := sys_path_lines(path.read_text()))
    }
    assert found == {}


MAX_LINES = 400  # a library file a reader takes in whole: past it, it holds two concepts


def test_no_library_file_is_over_400_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / "cl2gnn").rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
