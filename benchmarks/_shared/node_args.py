"""What the node benchmarks share to check their command line before torch loads: the
configuration files (a JSON list of ``{method, <NodeConfig field>: value}``) read and checked
entry by entry while parsing, so that a typo in the tenth entry fails at once, naming the
file and the entry, not after nine trainings; and the JSON lines a benchmark reads back.
(``--dataset`` is :func:`cl2gnn.apps.cmdline.dataset_argument`, ``cl2gnn node``'s own.)

Standard library and the torch-free ``cl2gnn.node.names`` / ``cl2gnn.node.config`` only;
a field's check is :func:`cl2gnn.node.config.check_field`, the one the library and
``cl2gnn node --config`` apply (through :func:`~cl2gnn.node.config.config_from_dict`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cl2gnn.node.config import config_from_dict
from cl2gnn.node.names import METHODS


def check_entry(entry: object) -> None:
    """Raise ``argparse.ArgumentTypeError`` unless ``entry`` is ``{method, <NodeConfig
    field>: value}``: ``method`` one of :data:`~cl2gnn.node.names.METHODS`, every other key
    a field whose value :func:`~cl2gnn.node.config.check_field` accepts, and the fields
    consistent with each other on :class:`~cl2gnn.node.NodeConfig`'s defaults (a warm-up
    no longer than the epochs; one ``num_neighbors`` fan-out per layer where the entry sets
    ``layers``) — the library's own checks, their messages (the field, the value and what is
    allowed) as they are."""
    if not isinstance(entry, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {entry!r}")
    if entry.get("method") not in METHODS:
        raise argparse.ArgumentTypeError(
            f"method must be one of {', '.join(METHODS)}, got {entry.get('method')!r}"
        )
    fields = {field: value for field, value in entry.items() if field != "method"}
    try:
        config = config_from_dict(fields)  # check_field on each, then NodeConfig's own checks
        if "layers" in fields:  # one fan-out per layer (else the method's depth decides)
            config.fan_outs()
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def config_list(text: str) -> list[dict]:
    """An argparse type: a JSON file holding a list of configuration entries, each checked
    by :func:`check_entry`; the message names the file and the entry (counted from 1)."""
    try:
        entries = json.loads(Path(text).expanduser().read_text())
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text}: {error.strerror or error}") from None
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text}: not JSON ({error})") from None
    if not isinstance(entries, list) or not entries:
        raise argparse.ArgumentTypeError(
            f"{text}: must hold a non-empty JSON list of {{method, <NodeConfig field>: value}}"
        )
    for number, entry in enumerate(entries, 1):
        try:
            check_entry(entry)
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{text}: entry {number}: {error}") from None
    return entries


def read_jsonl(path: str, keys: tuple[str, ...]) -> list[dict]:
    """The records of a JSON-lines file this benchmark wrote (``--report``), each holding
    ``keys``; ``ValueError`` naming the file and line otherwise."""
    records = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise ValueError(f"{path}: line {number} is not JSON ({error})") from None
        missing = [key for key in keys if not isinstance(record, dict) or key not in record]
        if missing:
            raise ValueError(f"{path}: line {number} has no {', '.join(missing)}")
        records.append(record)
    if not records:
        raise ValueError(f"{path}: no records")
    return records
