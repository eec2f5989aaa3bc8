"""The folder of a saved node run, ``cl2gnn node --save DIR``: ``DIR/seed_<k>/`` for every
seed (:meth:`~cl2gnn.node.TrainResult.save`) and ``DIR/result.json``, the index that lists
them, written last. A new run replaces an earlier one as a whole
(:func:`cl2gnn._files.replaced_as_a_whole`), only with ``--overwrite``; whatever else the
folder holds stays.

Standard library only: the command checks the folder before torch is imported."""

from __future__ import annotations

import os
import re
from pathlib import Path

RESULT = "result.json"
# an interrupted run's periodic checkpoints
# (cl2gnn.node.evaluation.experiment.checkpoint_folder): outside the staged entries, so that they
# outlive a killed run and --resume finds them
CHECKPOINTS = ".cl2gnn.checkpoints"
_SEED = re.compile(r"seed_\d+")


def is_run_entry(name: str) -> bool:
    """Whether an entry named ``name`` in the folder is a run's: its index or a seed folder."""
    return name == RESULT or _SEED.fullmatch(name) is not None


def check_no_earlier_run(folder: str | Path, overwrite: bool) -> None:
    """``ValueError`` (naming ``--save`` and what the folder holds) where ``folder`` holds an
    earlier run's entries, complete or interrupted, unless ``overwrite``."""
    folder = Path(folder)
    earlier = (
        sorted(e.name for e in folder.iterdir() if is_run_entry(e.name)) if folder.is_dir() else []
    )
    if earlier and not overwrite:
        shown = ", ".join(earlier[:4]) + (", …" if len(earlier) > 4 else "")
        raise ValueError(
            f"argument --save: {str(folder)!r} holds an earlier run ({shown}); --overwrite "
            "replaces it once this run has finished, or choose another folder"
        )


def check_library_entries(folder: str | Path) -> None:
    """``ValueError`` where a name the library makes in ``folder`` (the periodic
    checkpoints' folder, its ``seed_<k>`` folders and their files) is a symbolic link or
    not the kind of entry the library makes: it writes there, and would write into what a
    link names."""
    checkpoints = Path(folder) / CHECKPOINTS
    if not os.path.lexists(checkpoints):
        return
    if checkpoints.is_symlink() or not checkpoints.is_dir():
        raise ValueError(
            f"{checkpoints}: a symbolic link or a file where the library keeps a run's "
            "periodic checkpoints; remove it"
        )
    for entry in checkpoints.rglob("*"):  # rglob follows no link
        if entry.is_symlink():
            raise ValueError(
                f"{entry}: a symbolic link among the library's periodic checkpoints; remove it"
            )


def check_before_run(folder: str | Path, overwrite: bool, resume: bool) -> None:
    """What a run into the folder it holds the lock of must find there: no earlier run
    unless ``overwrite`` or ``resume`` (:func:`check_no_earlier_run`), and none of the
    library's names a link (:func:`check_library_entries`)."""
    check_library_entries(folder)
    if not resume:  # continuing the earlier run is what --resume asks for
        check_no_earlier_run(folder, overwrite)
