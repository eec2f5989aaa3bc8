"""The studies ``cl2gnn simulate`` offers, importable without torch (so that ``--help`` and a
wrong study name answer at once); study ``name`` lives in module ``name.replace("-", "_")``."""

from __future__ import annotations

STUDY_NAMES = (
    "message-passing",
    "proposition2",
    "proposition3",
    "spectral-clustering",
    "neural-kernel",
    "new-designs",
    "oversmoothing",
)
