"""Every file in ``examples/`` runs for an epoch and prints its accuracy beside its baseline's
(a line ``... accuracy: <number>`` and one ``Baseline ... accuracy: <number>``, a percentage
when followed by ``%``, else a fraction), and imports only public library names (nothing
private, nothing from the application layer ``cl2gnn.cli``)."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))
# a short run of each example; one not listed runs with --epochs 1
SHORT = {
    "simclr.py": ["--epochs", "1", "--batch-size", "64"],
    "deep_gcn.py": ["--epochs", "1", "--layers", "4"],
}
# the data an example reads under $CL2GNN_DATA (it is skipped without it)
NEEDS_DATA = {
    "grace_cora.py": "planetoid/Cora/raw",
    "deep_gcn.py": "planetoid/Cora/raw",
    "pyg_loop.py": "planetoid/Cora/raw",
}
ACCURACY = re.compile(r"^(?P<name>.*) accuracy: (?P<value>-?[0-9.]+)(?P<percent> %)?$", re.M)


def test_the_examples_are_found():
    expected = {"grace_cora.py", "simclr.py", "own_encoder.py", "deep_gcn.py", "pyg_loop.py"}
    assert expected <= {path.name for path in EXAMPLES}


def check_accuracy(match: re.Match) -> float:
    value, top = float(match["value"]), 100.0 if match["percent"] else 1.0
    assert 0 <= value <= top, f"{match[0]!r}: outside [0, {top:g}]"
    return value


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_prints_its_accuracy_and_baseline(path, tmp_path):
    if path.name in NEEDS_DATA:
        root = os.environ.get("CL2GNN_DATA")
        if not root or not (Path(root) / NEEDS_DATA[path.name]).is_dir():
            pytest.skip(f"needs $CL2GNN_DATA/{NEEDS_DATA[path.name]} (CL2GNN_DATA={root})")
    args = SHORT.get(path.name, ["--epochs", "1"])
    # in a scratch folder: an example must not write into the checkout
    result = subprocess.run(
        [sys.executable, str(path), *args], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = list(ACCURACY.finditer(result.stdout))
    method = [m for m in lines if not m["name"].startswith("Baseline")]
    baseline = [m for m in lines if m["name"].startswith("Baseline")]
    assert method, f"no accuracy line in:\n{result.stdout}"
    assert baseline, f"no baseline accuracy line in:\n{result.stdout}"
    for match in method + baseline:
        check_accuracy(match)


def private_imports(source: str) -> list[str]:
    """What ``source`` imports that is private (a name starting with ``_``, dunders such as
    ``__future__`` aside) or from ``cl2gnn.cli``, including an attribute reached through
    an imported module (``cl2gnn._files.cache_dir``)."""

    def bad(dotted: str) -> bool:
        parts = dotted.split(".")
        private = any(p.startswith("_") and not p.endswith("__") for p in parts)
        return private or parts[:2] in (["cl2gnn", "cli"], ["cl2gnn", "studies"])

    found, modules = [], set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += [alias.name] if bad(alias.name) else []
                modules.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            if node.level:  # an example is a script: a relative import reaches no package
                found.append(base)
            found += [f"{base}.{a.name}" for a in node.names if bad(f"{base}.{a.name}")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in modules:
                dotted = ".".join([inner.id, *reversed(chain)])
                found += [dotted] if bad(dotted) else []
    return found


@pytest.mark.parametrize(
    "line, bad",
    [
        ("from cl2gnn._files import cache_dir", True),
        ("from cl2gnn import _files", True),
        ("import cl2gnn._torchrun", True),
        ("from cl2gnn.cli.pretrain import augment_for", True),
        ("from cl2gnn import cli", True),
        ("import cl2gnn\ncl2gnn._files.cache_dir()", True),
        ("from . import helper", True),
        ("from __future__ import annotations", False),
        ("from cl2gnn.vision import MultiViewAugment", False),
        ("import torch\ntorch.nn.functional.relu", False),
        ("class A:\n    def f(self):\n        return self._x", False),
    ],
)
def test_the_import_check_sees_private_and_application_names(line, bad):
    # a check that misses one of these would pass the examples vacuously
    assert bool(private_imports(line)) is bad


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_imports_only_public_names(path):
    found = private_imports(path.read_text())
    assert not found, f"{path.name} imports private or application names: {found}"
