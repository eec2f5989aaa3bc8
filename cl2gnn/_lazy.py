"""Packages whose public names load on first use (PEP 562), so that the torch-free parts of
cl2gnn (the command's names and argument checks) import without torch."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(
    package: str, namespace: dict, exports: dict[str, str | None]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps a public name to
    the submodule (relative to ``package``) that defines it, or to ``None`` for a name that
    is itself a subpackage; a loaded name is bound in the package's ``namespace``, so later
    look-ups skip ``__getattr__``."""

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

    return __getattr__, __dir__
