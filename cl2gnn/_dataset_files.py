"""Where the named datasets' files are: the one table of the raw files each is read from,
in a data root (``$CL2GNN_DATA/<family>`` or ``--root``) and in the cache it is downloaded
into. :mod:`cl2gnn.datasets` reads them there; the command resolves a name to them before
anything runs, so that no output replaces an input (:func:`dataset_inputs`).

Standard library only: the command reads it before torch is imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ._files import cache_dir

EMBEDDED_DATASET = "digits-knn"  # scikit-learn's digits as a kNN graph: no file of its own
HETEROPHILOUS = (
    "actor",
    "chameleon",
    "chameleon-filtered",
    "cornell",
    "texas",
    "wisconsin",
    "minesweeper",
)
PLANETOID_FILES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


@dataclass(frozen=True)
class Layout:
    """A PyG dataset's raw files: its family (the sub-folder of ``$CL2GNN_DATA`` and of the
    cache), the folder of its raw files in a root, and their names."""

    family: str
    folder: str
    files: tuple[str, ...]


PYG_LAYOUTS = {
    "Cora": Layout("planetoid", "Cora/raw", tuple(f"ind.cora.{f}" for f in PLANETOID_FILES)),
    "CiteSeer": Layout(
        "planetoid", "CiteSeer/raw", tuple(f"ind.citeseer.{f}" for f in PLANETOID_FILES)
    ),
    "PubMed": Layout("planetoid", "PubMed/raw", tuple(f"ind.pubmed.{f}" for f in PLANETOID_FILES)),
    "Computers": Layout("amazon", "Computers/raw", ("amazon_electronics_computers.npz",)),
    "Photo": Layout("amazon", "Photo/raw", ("amazon_electronics_photo.npz",)),
    "CS": Layout("coauthor", "CS/raw", ("ms_academic_cs.npz",)),
    "Physics": Layout("coauthor", "Physics/raw", ("ms_academic_phy.npz",)),
    "WikiCS": Layout("wikics", "raw", ("data.json",)),
}
PYG_DATASETS = tuple(PYG_LAYOUTS)
DATASETS = (EMBEDDED_DATASET, *PYG_DATASETS, *HETEROPHILOUS)


def canonical_name(name: str) -> str | None:
    """``name`` as :data:`DATASETS` spells it (case-insensitive, ``_`` for ``-``), or
    ``None`` for no such dataset."""
    return {n.lower(): n for n in DATASETS}.get(name.lower().replace("_", "-"))


def family_of(canonical: str) -> str:
    return "heterophilous" if canonical in HETEROPHILOUS else PYG_LAYOUTS[canonical].family


def data_root(canonical: str, root: str | os.PathLike | None) -> Path | None:
    """The root a dataset is read from: ``root``, else ``$CL2GNN_DATA/<family>``, else
    ``None`` (the cache alone)."""
    if root is None and os.environ.get("CL2GNN_DATA"):
        return Path(os.environ["CL2GNN_DATA"]) / family_of(canonical)
    return None if root is None else Path(root)


def raw_files(canonical: str, root: str | os.PathLike) -> list[Path]:
    """The files a dataset is read from under ``root`` (a data root, or the cache's
    folder of its family)."""
    if canonical in HETEROPHILOUS:
        return [Path(root) / (canonical.replace("-", "_") + ".npz")]
    layout = PYG_LAYOUTS[canonical]
    return [Path(root) / layout.folder / name for name in layout.files]


def cache_root(canonical: str) -> Path:
    """Where a dataset without local files is downloaded: the cache's folder of its family."""
    return cache_dir() / family_of(canonical)


def dataset_inputs(name: str, root: str | os.PathLike | None) -> list[Path]:
    """The paths the dataset named ``name`` is read from, with ``root`` (``--root``): its
    files and their folder in its data root, and in the cache where the root lacks one of
    them (it is read, or downloaded, there); ``[]`` for the embedded dataset or no such
    name."""
    canonical = canonical_name(name)
    if canonical is None or canonical == EMBEDDED_DATASET:
        return []
    local = data_root(canonical, root)
    files = raw_files(canonical, local) if local is not None else []
    if not all(path.is_file() for path in files) or not files:
        files += raw_files(canonical, cache_root(canonical))
    folders = [] if canonical in HETEROPHILOUS else list(dict.fromkeys(p.parent for p in files))
    return [*files, *folders]
