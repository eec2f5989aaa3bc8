"""Two variants of a ``cl2gnn node`` run compared on the seeds both ran: the cells' folder
(``ROW_<variant>_seedK.json``, one ``--json`` result each), the seeds they share, and their
difference in pooled population standard deviations, ``sqrt((std_a² + std_b²) / 2)``."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from pathlib import Path


def mean_std(values: list[float]) -> str:
    """``mean ± std`` (population std, as ``cl2gnn node`` reports it), two decimals."""
    return f"{statistics.fmean(values):.2f} ± {statistics.pstdev(values):.2f}"


def pooled_std(a: list[float], b: list[float]) -> float:
    """``sqrt((std_a² + std_b²) / 2)`` of two samples' population stds."""
    return math.sqrt((statistics.pvariance(a) + statistics.pvariance(b)) / 2)


def read_cells(
    folder: Path, variants: tuple[str, str], row: str = "ROW"
) -> dict[str, dict[str, dict[int, dict]]]:
    """row -> variant -> seed -> the ``--json`` record of ``folder/ROW_<variant>_seedK.json``;
    ``ValueError`` naming a file that is not such a cell (``row``: what the name's first part
    is, in that message)."""
    cell = re.compile(rf"(?P<row>.+)_(?P<variant>{'|'.join(variants)})_seed(?P<seed>\d+)\.json")
    cells = defaultdict(lambda: defaultdict(dict))
    for path in sorted(folder.glob("*.json")):
        match = cell.fullmatch(path.name)
        if match is None:
            raise ValueError(f"{path}: not a {row}_<{'|'.join(variants)}>_seedK.json cell")
        record = json.loads(path.read_text())
        cells[match["row"]][match["variant"]][int(match["seed"])] = record
    return cells


def shared_seeds(runs: dict[str, dict[int, dict]], variants: tuple[str, str]) -> list[int]:
    """The seeds every variant ran, in order."""
    return sorted(set.intersection(*(set(runs.get(v, {})) for v in variants)))
