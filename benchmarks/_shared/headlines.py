"""The summary's headline of each topic (``results.TOPICS``), read off the tables it names
(``results/<name>.json``): a few words and numbers, none typed here. A table that no longer
has the rows or columns a headline reads is a ``ValueError`` naming the table and what it
lacks, so that a renamed column fails the page instead of printing a stale headline."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks._shared.results import measured_on

Tables = dict[str, dict]  # a table's name (its file's stem) -> its record


@dataclass(frozen=True)
class Headline:
    text: str
    sources: dict[str, list[str]]  # each table read -> the dates its rows were measured on


def _index(tables: Tables, name: str, column: str) -> int:
    if column not in tables[name]["columns"]:
        raise ValueError(f"{name}.json: no column {column!r} (the summary's headline reads it)")
    return tables[name]["columns"].index(column)


def _column(tables: Tables, name: str, column: str) -> list[tuple[list, str]]:
    """Each row of table ``name`` with its cell in ``column``, as text."""
    index = _index(tables, name, column)
    return [(row, str(row[index])) for row in tables[name]["rows"]]


def _cell(tables: Tables, name: str, row: list, column: str) -> str:
    """``row``'s cell in ``column`` of table ``name``, as text."""
    return str(row[_index(tables, name, column)])


def _dates(tables: Tables, name: str, rows: list[list]) -> list[str]:
    return sorted({measured_on(row) or tables[name]["date"] for row in rows})


def _first(tables: Tables, name: str, cells, label: str) -> tuple[list, str]:
    """The row of ``cells`` whose first cell starts with ``label``, and its cell."""
    for row, value in cells:
        if str(row[0]).startswith(label):
            return row, value
    raise ValueError(f"{name}.json: no row {label!r} (the summary's headline reads it)")


def accuracy(tables: Tables) -> Headline:
    name = "node_auto"
    targets = _column(tables, name, "target")
    met = sum(value == "met" for _, value in targets)
    _, score = _first(tables, name, _column(tables, name, "auto"), "Cora")
    text = (
        f"method auto, the default: its target (the page's notes) met on {met} of "
        f"{len(targets)} graphs; Cora {score}"
    )
    return Headline(text, {name: _dates(tables, name, [row for row, _ in targets])})


def reproduction(tables: Tables) -> Headline:
    name, zoo = "node_reproduction", "node_zoo"
    library = _column(tables, name, "target, library probe")
    authors = _column(tables, name, "target, authors' probe")
    # the authors' configurations; a bracketed row is an attempt with changed fields
    pairs = zip(library, authors, strict=True)
    published = [(row, (a, b)) for (row, a), (_, b) in pairs if " (" not in row[0]]
    reached = sum("met" in targets for _, targets in published)
    anchors = _column(tables, zoo, "target")
    text = (
        f"{reached} of {len(published)} published numbers reached with the authors' "
        f"configurations (either probe); the zoo on Cora: {sum(v == 'met' for _, v in anchors)} "
        f"of {len(anchors)} anchors"
    )
    sources = {name: _dates(tables, name, [row for row, _ in published])}
    sources[zoo] = _dates(tables, zoo, [row for row, _ in anchors])
    return Headline(text, sources)


def speed(tables: Tables) -> Headline:
    name = "node_speed_grace"
    ratio = _column(tables, name, "cl2gnn / GRACE's code")
    text = (
        f"a Cora epoch in {statistics.median(float(v) for _, v in ratio):.2f}× the time of "
        "GRACE's own code"
    )
    if "cl2gnn, bf16 products / GRACE's code" in tables[name]["columns"]:
        bf16 = _column(tables, name, "cl2gnn, bf16 products / GRACE's code")
        text += f" ({statistics.median(float(v) for _, v in bf16):.2f}× with bfloat16 products)"
    rows = [row for row, _ in ratio]
    return Headline(text + ", the median of the rounds", {name: _dates(tables, name, rows)})


def scale(tables: Tables) -> Headline:
    name = "node_large_end_to_end"
    one = [row for row, value in _column(tables, name, "processes") if value == "1"]
    phases = {_cell(tables, name, row, "phase"): row for row in one}
    if not {"epoch", "embed"} <= phases.keys():
        raise ValueError(f"{name}.json: no epoch or embed phase of one process (the headline)")
    epoch, embed = phases["epoch"], phases["embed"]
    memory = [_cell(tables, name, row, "RSS / graph") for row in (epoch, embed)]
    text = (
        f"ogbn-products' size in one process: an epoch in {_cell(tables, name, epoch, 'wall (s)')}"
        f" s at {memory[0]}× the graph's memory, every node embedded at {memory[1]}×"
    )
    return Headline(text, {name: _dates(tables, name, [epoch, embed])})


def image_ssl(tables: Tables) -> Headline:
    name = "image_ssl_accuracy_digits"
    accuracy = _column(tables, name, "kNN accuracy (last epoch)")
    floor_row, floor = _first(tables, name, accuracy, "untrained")
    best_row, best = max(
        ((row, value) for row, value in accuracy if row is not floor_row), key=lambda c: float(c[1])
    )
    text = f"digits: kNN accuracy {best} ({best_row[0]}) against {floor} untrained"
    return Headline(text, {name: _dates(tables, name, [row for row, _ in accuracy])})


def operators(tables: Tables) -> Headline:
    name = "operators_contract"
    errors = _column(tables, name, "max abs error")
    text = (
        f"{len(errors)} checks of a layer against a gradient step on its energy: largest "
        f"error {max(float(v) for _, v in errors):.1e} in float64"
    )
    return Headline(text, {name: _dates(tables, name, [row for row, _ in errors])})


# each topic's headline: the tables it reads and how
HEADLINES: dict[str, tuple[tuple[str, ...], Callable[[Tables], Headline]]] = {
    "Node classification": (("node_auto",), accuracy),
    "Reproduction": (("node_reproduction", "node_zoo"), reproduction),
    "Speed": (("node_speed_grace",), speed),
    "Scale": (("node_large_end_to_end",), scale),
    "Image SSL": (("image_ssl_accuracy_digits",), image_ssl),
    "Operators": (("operators_contract",), operators),
}
