"""The folder of a saved node run, ``cl2gnn node --save DIR``: ``DIR/seed_<k>/`` for every
seed (:meth:`~cl2gnn.node.TrainResult.save`) and ``DIR/result.json``, the index that lists
them, written last. A new run replaces an earlier one as a whole
(:func:`cl2gnn._files.replaced_as_a_whole`), only with ``--overwrite``; whatever else the
folder holds stays.

Standard library only: the command checks the folder before torch is imported."""

from __future__ import annotations

import re
from pathlib import Path

RESULT = "result.json"
# an interrupted run's periodic checkpoints
# (cl2gnn.node.evaluation.experiment.checkpoint_folder): outside the staged entries, so that they
# outlive a killed run and --resume finds them
CHECKPOINTS = ".cl2gnn.checkpoints"
_SEED = re.compile(r"seed_\d+")


def owns(name: str) -> bool:
    """Whether an entry named ``name`` in the folder is a run's: its index or a seed folder."""
    return name == RESULT or _SEED.fullmatch(name) is not None


def check_no_earlier_run(folder: str | Path, overwrite: bool) -> None:
    """``ValueError`` (naming ``--save`` and what the folder holds) where ``folder`` holds an
    earlier run's entries, complete or interrupted, unless ``overwrite``."""
    folder = Path(folder)
    earlier = sorted(e.name for e in folder.iterdir() if owns(e.name)) if folder.is_dir() else []
    if earlier and not overwrite:
        shown = ", ".join(earlier[:4]) + (", …" if len(earlier) > 4 else "")
        raise ValueError(
            f"argument --save: {str(folder)!r} holds an earlier run ({shown}); --overwrite "
            "replaces it once this run has finished, or choose another folder"
        )
