"""cl2gnn: contrastive learning as message passing on PyTorch Geometric.

The subpackages load on first use (PEP 562): ``import cl2gnn`` costs nothing, so that the
``cl2gnn`` command answers ``--help`` and argument errors without importing torch.
``cl2gnn.nn``, ``from cl2gnn import losses`` and ``cl2gnn.set_validation`` work as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_SUBPACKAGES = ("graphs", "losses", "nn")

__all__ = ["__version__", "graphs", "losses", "nn", "set_validation"]

if TYPE_CHECKING:
    from . import graphs, losses, nn
    from ._validation import set_validation


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)  # binds itself as an attribute
    if name == "set_validation":
        from ._validation import set_validation

        globals()[name] = set_validation  # later look-ups skip this function
        return set_validation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
