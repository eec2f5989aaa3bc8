"""The seed papers' synthetic studies, each run with the library's own operators and losses.

``cl2gnn simulate <study>`` runs one and writes its PNG figures and a JSON of its metrics.
The studies load on first use (PEP 562), so that :data:`STUDY_NAMES` imports without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .names import STUDY_NAMES

if TYPE_CHECKING:  # the exports, read by lazy_exports
    from .common import StudyResult
    from .run import STUDIES, run_study

__getattr__, __dir__, _lazy_names = lazy_exports(__name__, globals())
__all__ = ["STUDY_NAMES", *_lazy_names]
