"""Packages whose public names load on first use (PEP 562), so that the torch-free parts of
cl2gnn (the command's names and argument checks) import without torch.

A package lists its exports once, as the imports of its ``if TYPE_CHECKING:`` block (what
type checkers and readers see); :func:`lazy_exports` reads that block from the package's
source and loads each name from its module when it is first looked up."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path


def type_checking_imports(path: str | Path) -> dict[str, str | None]:
    """The names imported under ``if TYPE_CHECKING:`` in the module at ``path``: each
    name's (relative) module, or ``None`` for a subpackage (``from . import name``)."""
    exports: dict[str, str | None] = {}
    for node in ast.parse(Path(path).read_text()).body:
        if not (isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom):
                module = "." * statement.level + (statement.module or "")
                for alias in statement.names:
                    exports[alias.name] = None if statement.module is None else module
    return exports


def lazy_exports(
    package: str, namespace: dict
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package`` (``namespace``: its
    ``globals()``), exporting the names of its ``TYPE_CHECKING`` imports; a loaded name is
    bound in the namespace, so later look-ups skip ``__getattr__``."""
    exports = type_checking_imports(namespace["__file__"])

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if exports[name] is None:
            value = importlib.import_module(f".{name}", package)
        else:
            value = getattr(importlib.import_module(exports[name], package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__, sorted(exports)
