"""What the node benchmarks share to check their command line before torch loads: the
configuration files (a JSON list of ``{method, <NodeConfig field>: value}``) read and checked
entry by entry while parsing, so that a typo in the tenth entry fails at once, naming the
file and the entry, not after nine trainings; and the JSON lines a benchmark reads back.
(``--dataset`` is :func:`cl2gnn.cli.node_arguments.dataset_argument`, ``cl2gnn node``'s own.)

An entry is checked as ``cl2gnn node --config`` checks a file
(:func:`cl2gnn.cli.node_arguments.checked_entries`: the configuration's fields by its own checks,
the methods' options by theirs), its method against the registry.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cl2gnn.cli.node_arguments import checked_entries
from cl2gnn.node.config import FIELDS, config_from_dict


def check_entry(entry: object) -> None:
    """Raise ``argparse.ArgumentTypeError`` unless ``entry`` is ``{method, <NodeConfig
    field or method option>: value}`` (the method and the options are checked after
    parsing, :func:`check_methods`): every field's value one its check accepts, and the fields
    consistent with each other on :class:`~cl2gnn.node.NodeConfig`'s defaults (a warm-up
    no longer than the epochs; one ``num_neighbors`` fan-out per layer where the entry sets
    ``layers``) — the library's own checks, their messages (the field, the value and what is
    allowed) as they are."""
    if not isinstance(entry, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {entry!r}")
    fields = {field: value for field, value in entry.items() if field in FIELDS}
    try:
        config = config_from_dict(fields)  # each field, then NodeConfig's own checks
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
    return ConfigEntries(entries, text)


class ConfigEntries(list):
    """A configuration list as :func:`config_list` read it, and the file it came from."""

    def __init__(self, entries: list[dict], path: str) -> None:
        super().__init__(entries)
        self.path = path


def check_methods(parser: argparse.ArgumentParser, entries: ConfigEntries) -> None:
    """After parsing (the registry loads torch, which an argument error need not wait for):
    ``parser.error`` naming the file and the first entry whose method is not registered or
    whose method options a method's check refuses (:func:`checked_entries`)."""
    from cl2gnn.node.methods import METHODS

    for number, entry in enumerate(entries, 1):
        where = f"argument configs: {entries.path}: entry {number}"
        if entry.get("method") not in METHODS:
            parser.error(
                f"{where}: method must be one of {', '.join(METHODS)}, got {entry.get('method')!r}"
            )
        try:
            checked_entries({k: v for k, v in entry.items() if k != "method"})
        except ValueError as error:
            parser.error(f"{where}: {error}")


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


def check_method_names(parser: argparse.ArgumentParser, option: str, names: list[str]) -> None:
    """After parsing (the registry loads torch): ``parser.error`` naming ``option`` and the
    first of ``names`` that is not a registered method."""
    from cl2gnn.node.methods import METHODS

    for name in names:
        if name not in METHODS:
            parser.error(
                f"argument {option}: invalid choice: {name!r} (choose from {', '.join(METHODS)})"
            )
