"""What the node benchmarks share to check their command line before torch loads: the
``--dataset`` argument, and the configuration files (a JSON list of ``{method, <NodeConfig
field>: value}``) read and checked entry by entry while parsing, so that a typo in the
tenth entry fails at once, naming the file and the entry, not after nine trainings.

Standard library and the torch-free ``cl2gnn.node.names`` / ``cl2gnn.node.config`` only.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from cl2gnn._torchrun import MODES
from cl2gnn.apps import cmdline
from cl2gnn.apps.cmdline import dataset_argument
from cl2gnn.node.config import NodeConfig
from cl2gnn.node.names import EMBEDDINGS, ENCODERS, METHODS

# cl2gnn.node.models.ACTIVATIONS's names (that module imports torch; a test keeps them equal)
ACTIVATIONS = ("relu", "prelu", "rrelu", "elu", "none")


dataset = dataset_argument  # the --dataset type of cl2gnn node


def _integer(low: int, none_ok: bool = False) -> Callable[[object], None]:
    def check(value: object) -> None:
        if value is None and none_ok:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value!r}")
        cmdline.int_range(low)(str(value))

    return check


def _number(parse: Callable[[str], float]) -> Callable[[object], None]:
    """``parse`` (a cl2gnn._cli type) applied to a JSON number."""

    def check(value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise argparse.ArgumentTypeError(f"must be a number, got {value!r}")
        parse(str(value))

    return check


def _pair(value: object) -> None:
    """Two probabilities, one per view."""
    if not isinstance(value, list) or len(value) != 2:
        raise argparse.ArgumentTypeError(f"must be two numbers in [0, 1], got {value!r}")
    for item in value:
        _number(cmdline.probability)(item)


def _one_of(choices: tuple[str, ...]) -> Callable[[object], None]:
    def check(value: object) -> None:
        if value not in choices:
            raise argparse.ArgumentTypeError(f"must be one of {', '.join(choices)}, got {value!r}")

    return check


def _boolean(value: object) -> None:
    if not isinstance(value, bool):
        raise argparse.ArgumentTypeError(f"must be true or false, got {value!r}")


def _neighbors(value: object) -> None:
    """Neighbours sampled per node at each hop, -1 for all."""
    if (
        not isinstance(value, list)
        or not value
        or any(isinstance(v, bool) or not isinstance(v, int) or v == 0 or v < -1 for v in value)
    ):
        raise argparse.ArgumentTypeError(
            f"must be a list of integers >= 1 or -1 (all), got {value!r}"
        )


FIELD_CHECKS: dict[str, Callable[[object], None]] = {
    "learning_rate": _number(cmdline.positive_float),
    "hidden": _integer(1),
    "proj_hidden": _integer(1),
    "activation": _one_of(ACTIVATIONS),
    "drop_edge": _pair,
    "drop_feature": _pair,
    "temperature": _number(cmdline.positive_float),
    "epochs": _integer(1),
    "weight_decay": _number(cmdline.non_negative_float),
    "encoder": _one_of(ENCODERS),
    "embedding": _one_of(EMBEDDINGS),
    "neighbor_weight": _number(cmdline.non_negative_float),
    "clusters": _integer(1),
    "normalize_features": _boolean,
    "num_keys": _integer(1, none_ok=True),
    "swa_start": _integer(0, none_ok=True),
    "mask_nodes": _pair,
    "batch_size": _integer(1, none_ok=True),
    "num_neighbors": _neighbors,
    "distributed": _one_of(MODES),
    "first_hidden": _integer(1, none_ok=True),
    "out_activation": _boolean,
    "batch_norm": _boolean,
    "self_loops": _boolean,
    "predictor_hidden": _integer(1),
    "predictor_layers": _integer(0),
    "ema_decay": _number(cmdline.probability),
    "ema_cosine": _boolean,
    "decorrelation": _number(cmdline.non_negative_float),
    "num_samples": _integer(1, none_ok=True),
    "lr_warmup": _integer(0),
    "lr_cosine": _boolean,
}


def check_entry(entry: object) -> None:
    """Raise ``argparse.ArgumentTypeError`` unless ``entry`` is ``{method, <NodeConfig
    field>: value}`` with each value in its field's range."""
    if not isinstance(entry, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {entry!r}")
    if entry.get("method") not in METHODS:
        raise argparse.ArgumentTypeError(
            f"method must be one of {', '.join(METHODS)}, got {entry.get('method')!r}"
        )
    for field, value in entry.items():
        if field == "method":
            continue
        if field not in FIELD_CHECKS:
            raise argparse.ArgumentTypeError(
                f"unknown field {field!r}; NodeConfig's fields: {', '.join(FIELD_CHECKS)}"
            )
        try:
            FIELD_CHECKS[field](value)
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{field} {error}") from None
    epochs = entry.get("epochs", NodeConfig.epochs)
    if entry.get("swa_start") is not None and entry["swa_start"] >= epochs:
        raise argparse.ArgumentTypeError(
            f"swa_start must be below the {epochs} epochs, got {entry['swa_start']}"
        )


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
