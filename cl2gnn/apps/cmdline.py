"""What every cl2gnn command shares so that it fails like a tool: argument types that refuse
bad values while parsing (argparse's ``type=``), a parser whose errors are one line, the
device check, the boundary that turns a library error into ``prog: error: ...`` (exit 2),
and output files that appear only complete.

Standard library only: ``--help`` and argument errors must not wait for torch.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

DEBUG_VARIABLE = "CL2GNN_DEBUG"  # "1": let errors raise with their traceback


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, its error one line (``prog: error: message``, exit 2) without the
    usage block, so that the message is what the user reads; ``--help`` shows the usage.
    No abbreviations: ``--seed`` must never be read as ``--seeds`` (its sub-parsers are of
    this class too)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        fail(self.prog, message)


def fail(prog: str, message: str) -> NoReturn:
    """Print ``prog: error: message`` on one line to stderr and exit with status 2."""
    line = " ".join(str(message).splitlines())
    sys.stderr.write(f"{prog}: error: {line}\n")
    raise SystemExit(2)


def int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]`` (``high=None``: no upper bound)."""
    allowed = f">= {low}" if high is None else f"in [{low}, {high}]"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer {allowed}, got {text!r}"
            ) from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be an integer {allowed}, got {text}")
        return value

    return parse


positive_int = int_range(1)
non_negative_int = int_range(0)
seed = int_range(0, 2**32 - 1)  # what numpy and scikit-learn accept as a seed


def _finite_float(text: str, allowed: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number {allowed}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number {allowed}, got {text}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (a learning rate, a temperature, a tolerance)."""
    value = _finite_float(text, "> 0")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse type: a finite number >= 0 (a weight decay, a loss weight)."""
    value = _finite_float(text, ">= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def probability(text: str) -> float:
    """An argparse type: a number in [0, 1] (a drop rate, a mask fraction)."""
    value = _finite_float(text, "in [0, 1]")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text}")
    return value


def existing_path(text: str) -> str:
    """An argparse type: a file or folder that exists (a dataset root, a config)."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file or folder: {text!r}")
    return text


def output_file(text: str) -> str:
    """An argparse type: a file the command may create or replace — not a folder, and no
    part of its folder an existing file — so that a long run cannot fail at its last write."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
    _check_parents(path, text)
    return text


def output_dir(text: str) -> str:
    """An argparse type: a folder the command may create or write into (not a file)."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    _check_link(path, text)
    _check_parents(path, text)
    return text


def _check_link(path: Path, text: str) -> None:
    """A dangling symbolic link passes ``exists()`` as absent, but no folder can be made
    there nor below it: refuse it now rather than after the work."""
    if path.is_symlink() and not path.exists():
        raise argparse.ArgumentTypeError(
            f"{str(path)!r} in {text!r} is a symbolic link to {os.readlink(path)!r}, "
            "which does not exist"
        )


def _check_parents(path: Path, text: str) -> None:
    """The folders above ``path``: none a file or a dangling link, the nearest existing one
    writable."""
    for parent in path.absolute().parents:
        _check_link(parent, text)
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{str(parent)!r} in {text!r} is a file")
            if not os.access(parent, os.W_OK):
                raise argparse.ArgumentTypeError(f"{str(parent)!r} in {text!r} is not writable")
            return


FILE_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def file_stem(text: str) -> str:
    """An argparse type: a name for a file in a folder the command chooses (letters, digits,
    ``_ . -``; no path)."""
    if not FILE_STEM.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"must be a plain file name (letters, digits, _ . -), got {text!r}"
        )
    return text


_DEVICE = re.compile(r"[a-z]+(:\d+)?")


def device(text: str) -> str:
    """An argparse type: a device string's form, ``type`` or ``type:index`` (``cpu``,
    ``cuda``, ``cuda:1``); whether the machine has it is :func:`check_device`'s question."""
    if not _DEVICE.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"must be a device such as cpu, cuda or cuda:1, got {text!r}"
        )
    return text


def check_device(name: str, option: str = "--device") -> None:
    """Raise ``ValueError`` naming ``option`` unless torch can use device ``name`` here
    (``cuda`` without CUDA, ``cuda:2`` on a one-GPU machine). Imports torch unless ``cpu``:
    call it after parsing, before any data work."""
    if name == "cpu":
        return
    import torch

    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ValueError(f"argument {option}: unknown device {name!r}") from None
    if dev.type == "cpu":
        return
    backend = getattr(torch, dev.type, None)
    if backend is None or not backend.is_available():
        raise ValueError(
            f"argument {option}: {name!r} asked for, but this torch ({torch.__version__}) "
            f"finds no {dev.type} device; use --device cpu"
        )
    count = backend.device_count()
    if dev.index is not None and dev.index >= count:
        raise ValueError(
            f"argument {option}: {name!r} asked for, but there are {count} {dev.type} "
            f"device(s), numbered from 0"
        )


def quiet_pyg_warning() -> None:
    """Hide the one notice PyG triggers on import (torch.jit.script's deprecation) — a
    library matter, not the user's — and nothing else."""
    warnings.filterwarnings(
        "ignore",
        message=r"`torch\.jit\.script` is deprecated",
        category=FutureWarning,
        module=r"torch\.jit\._script",
    )


@contextmanager
def user_errors(prog: str) -> Iterator[None]:
    """The command's boundary: a ``ValueError`` (the library's checks of the user's data,
    options checked after parsing) or an ``OSError`` (a file) becomes ``prog: error: ...``
    on one line with exit status 2, Ctrl-C a one-line ``interrupted`` with status 130;
    ``CL2GNN_DEBUG=1`` lets them raise with the traceback."""
    try:
        yield
    except (ValueError, OSError) as error:
        if os.environ.get(DEBUG_VARIABLE) == "1":
            raise
        fail(prog, _describe(error))
    except KeyboardInterrupt:
        if os.environ.get(DEBUG_VARIABLE) == "1":
            raise
        sys.stderr.write(f"{prog}: interrupted\n")
        raise SystemExit(130) from None


def _describe(error: Exception) -> str:
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    return str(error) or type(error).__name__


def dataset_argument(text: str) -> str:
    """An argparse type for ``--dataset``: a name of :data:`~cl2gnn.datasets.names.DATASETS`
    (case-insensitive, ``_`` for ``-``) or the path of an existing ``.npz`` graph, checked
    before torch loads."""
    from cl2gnn.datasets.names import DATASETS

    if text.endswith(".npz"):
        if not Path(text).expanduser().is_file():
            raise argparse.ArgumentTypeError(f"no such file: {text!r}")
        return text
    if text.lower().replace("_", "-") not in {name.lower() for name in DATASETS}:
        raise argparse.ArgumentTypeError(
            f"unknown dataset {text!r}; choose from {', '.join(DATASETS)} or give a PATH.npz"
        )
    return text


def config_field(name: str, parse: Callable[[str], object]) -> Callable[[str], object]:
    """An argparse type for :class:`~cl2gnn.node.NodeConfig` field ``name``: the text read by
    ``parse`` (``int``, ``float``), then checked by the configuration's own check (the one
    place a field's range is written)."""
    from cl2gnn.node.config import check_field

    def check(text: str) -> object:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a {parse.__name__}, got {text!r}") from None
        try:
            return check_field(name, value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    check.__name__ = name  # argparse names the type in "invalid <name> value"
    return check


def config_file(text: str) -> dict:
    """An argparse type: a JSON or YAML file (by its suffix) holding a mapping of
    :class:`~cl2gnn.node.NodeConfig` fields, each checked; the message names the file."""
    from cl2gnn.node.config import check_field

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
        return {name: check_field(name, value) for name, value in entries.items()}
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text}: {error}") from None
