"""The seed papers' synthetic studies, each run with the library's own operators and losses.

``cl2gnn simulate <study>`` runs one and writes its PNG figures and a JSON of its metrics.
The studies load on first use (PEP 562), so that :data:`STUDY_NAMES` imports without torch.
"""

from __future__ import annotations

from .common import StudyResult
from .run import STUDIES, STUDY_NAMES, run_study

__all__ = [
    "STUDIES",
    "STUDY_NAMES",
    "StudyResult",
    "run_study",
]
