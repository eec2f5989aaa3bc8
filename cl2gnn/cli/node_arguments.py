"""The ``cl2gnn node`` command's argument types (and the node benchmarks'): a dataset, a
configuration field, a method's option, a ``--config`` file, each checked by the library's
own checks, with argparse's one-line message."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path


def dataset_argument(text: str) -> str:
    """An argparse type for ``--dataset``: a name of :data:`~cl2gnn.cli.catalogue.DATASETS`
    (case-insensitive, ``_`` for ``-``) or the path of an existing ``.npz`` graph, checked
    before torch loads."""
    from .catalogue import DATASETS

    if text.endswith(".npz"):
        if not Path(text).expanduser().is_file():
            raise argparse.ArgumentTypeError(f"no such file: {text!r}")
        return text
    if text.lower().replace("_", "-") not in {name.lower() for name in DATASETS}:
        raise argparse.ArgumentTypeError(
            f"unknown dataset {text!r}; choose from {', '.join(DATASETS)} or give a PATH.npz"
        )
    return text


def checked_argument(
    name: str, parse: Callable[[str], object], checked: Callable[[str, object], object]
) -> Callable[[str], object]:
    """An argparse type: the text read by ``parse`` (``int``, ``float``), then
    ``checked(name, value)``, whose ``ValueError`` argparse reports as the argument's."""

    def check(text: str) -> object:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a {parse.__name__}, got {text!r}") from None
        try:
            return checked(name, value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    check.__name__ = name  # argparse names the type in "invalid <name> value"
    return check


def config_field(name: str, parse: Callable[[str], object]) -> Callable[[str], object]:
    """An argparse type for :class:`~cl2gnn.node.NodeConfig` field ``name``, checked by the
    configuration's own check (the one place a field's range is written)."""
    from cl2gnn.node.config import check_field

    return checked_argument(name, parse, check_field)


def method_option(name: str, parse: Callable[[str], object]) -> Callable[[str], object]:
    """An argparse type for the methods' option ``name``: refused where every method that
    has it refuses the value (:func:`~cl2gnn.node.methods.option_value`, which loads the
    registry, and torch, only when the option is given); the method that trains checks it
    with its own check when the run is planned."""

    def checked(name: str, value: object) -> object:
        from cl2gnn.node.methods import option_value

        return option_value(name, value)

    return checked_argument(name, parse, checked)


def checked_entries(entries: dict) -> dict:
    """A flat configuration mapping (:meth:`~cl2gnn.node.NodeConfig.as_dict`'s), each entry
    checked: the fields by the configuration's checks, the other names by the methods'
    (:func:`~cl2gnn.node.methods.option_value`, loading the registry only where some are
    given); ``ValueError`` naming the first it refuses."""
    from cl2gnn.node.config import FIELDS, check_field

    checked = {name: check_field(name, value) for name, value in entries.items() if name in FIELDS}
    options = {name: value for name, value in entries.items() if name not in FIELDS}
    if options:
        from cl2gnn.node.methods import option_value

        checked |= {name: option_value(name, value) for name, value in options.items()}
    return {name: checked[name] for name in entries}


def config_setting(text: str) -> tuple[str, object]:
    """An argparse type for ``--set NAME=VALUE``: a :class:`~cl2gnn.node.NodeConfig` field or a
    method's option, its value read as JSON (``0.5``, ``true``, ``[0.2, 0.4]``, ``null``)
    or else as the text itself (``sage``), checked as a ``--config`` file's entry."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"must be NAME=VALUE, got {text!r}")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    try:
        return name, checked_entries({name: parsed})[name]
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def config_file(text: str) -> dict:
    """An argparse type: a JSON or YAML file (by its suffix) holding a mapping of
    :class:`~cl2gnn.node.NodeConfig` fields, each checked; the message names the file."""
    path = Path(text).expanduser()
    yaml_file = path.suffix.lower() in (".yaml", ".yml")
    if not yaml_file and path.suffix.lower() != ".json":
        raise argparse.ArgumentTypeError(f"{text}: must be a .json, .yaml or .yml file")
    try:
        content = path.read_text()
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text}: {error.strerror or error}") from None
    if yaml_file:
        import yaml

        try:
            entries = yaml.safe_load(content)
        except yaml.YAMLError as error:
            reason = " ".join(str(error).split())
            raise argparse.ArgumentTypeError(f"{text}: not YAML ({reason})") from None
    else:
        try:
            entries = json.loads(content)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{text}: not JSON ({error})") from None
    if not isinstance(entries, dict):
        raise argparse.ArgumentTypeError(f"{text}: must hold a mapping of NodeConfig fields")
    try:
        return FileFields(checked_entries(entries), text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text}: {error}") from None


class FileFields(dict):
    """A file's mapping of fields (:func:`config_file`), which remembers the file's ``path``:
    an input that no output may replace (:func:`check_paths`)."""

    def __init__(self, fields: dict, path: str) -> None:
        super().__init__(fields)
        self.path = path
