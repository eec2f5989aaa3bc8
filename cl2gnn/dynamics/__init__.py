"""The seed papers' synthetic studies, each run with the library's own operators and losses.

``cl2gnn simulate <study>`` runs one and writes its PNG figures and a JSON of its metrics.
The studies load on first use (PEP 562), so that :data:`STUDY_NAMES` imports without torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .names import STUDY_NAMES

# public name -> submodule that defines it
_EXPORTS = {"STUDIES": "run", "run_study": "run", "StudyResult": "common"}

__all__ = ["STUDIES", "STUDY_NAMES", "StudyResult", "run_study"]

if TYPE_CHECKING:
    from .common import StudyResult
    from .run import STUDIES, run_study


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
