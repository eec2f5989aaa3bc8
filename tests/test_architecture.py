"""The house's two rules, read from the source: the library never imports an application
(:mod:`cl2gnn.cli`), and no module imports itself again through others (no import cycle),
counting the imports inside functions too."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cl2gnn"
APPS = "cl2gnn.cli"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
LIBRARY = sorted(m for m in MODULES if not m.startswith(APPS) and m != "cl2gnn.__main__")


def imported_modules(name: str) -> set[str]:
    """The cl2gnn modules ``name`` imports anywhere in its source (module level, inside
    functions, under ``TYPE_CHECKING``): for ``from package import x`` the submodule
    ``package.x`` where it is one, else the package."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    return {m for m in found if m in MODULES}


def import_edges(name: str) -> set[str]:
    """What importing ``name`` may execute: each imported module and the packages above it
    that are not already above ``name`` (they run their ``__init__`` first)."""
    edges = set()
    for target in imported_modules(name):
        parts = target.split(".")
        for depth in range(1, len(parts) + 1):
            prefix = ".".join(parts[:depth])
            if not name.startswith(prefix + ".") and prefix != name:
                edges.add(prefix)
    return edges


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a path that returns to its start, or ``None``."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_walk_sees_imports_inside_functions_and_relative_ones():
    # a check that cannot see a function-level or relative import would pass vacuously
    # inside _run_node()
    assert "cl2gnn.node.evaluation.experiment" in imported_modules("cl2gnn.cli.node")
    assert "cl2gnn._checks" in imported_modules("cl2gnn.node.methods.contrastive")
    assert "cl2gnn.node.api" in import_edges("cl2gnn.node.evaluation.experiment")  # from ..api


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("name", LIBRARY)
def test_library_module_never_imports_an_application(name):
    applications = {m for m in imported_modules(name) if m.startswith(APPS)}
    assert not applications, f"{name} imports {sorted(applications)}"


def test_no_import_cycle_anywhere_in_the_package():
    graph = {name: import_edges(name) for name in MODULES}
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_every_library_module_imports_with_the_applications_blocked():
    """A fresh interpreter in which ``cl2gnn.cli`` cannot be imported imports every
    library module (what the static walk above cannot see: an import built at run time)."""
    code = (
        "import importlib, importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {APPS!r} or name.startswith({APPS + '.'!r}):\n"
        "            raise ImportError(f'the library imported {name}')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"for name in {LIBRARY!r}:\n"
        "    importlib.import_module(name)\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


PACKAGES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_of_every_package_resolves(package):
    """``from package import *`` and ``package.name`` work for every name ``__all__`` lists
    (``cl2gnn.node.ProjectionHead`` once named a module that did not hold it)."""
    import importlib

    module = importlib.import_module(package)
    missing = [name for name in getattr(module, "__all__", ()) if not hasattr(module, name)]
    assert missing == []
    namespace = {}
    exec(f"from {package} import *", namespace)  # the star import reads the same list
