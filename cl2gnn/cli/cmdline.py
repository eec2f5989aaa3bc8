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

from cl2gnn._checks import COUNT_MAX, FLOAT32_MAX, SEED_MAX
from cl2gnn._dataset_files import dataset_inputs

from .node_arguments import config_file, dataset_argument

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


def int_range(low: int, high: int = COUNT_MAX) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]``."""
    allowed = f"in [{low}, {high}]"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer {allowed}, got {text!r}"
            ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer {allowed}, got {text}")
        return value

    return parse


positive_int = int_range(1)
non_negative_int = int_range(0)
seed = int_range(0, SEED_MAX)  # what numpy and scikit-learn accept as a seed


def float_range(low: float, high: float, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in ``[low, high]`` (``above``: ``(low, high]``)."""
    allowed = f"in {'(' if above else '['}{low:g}, {high:g}]"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number {allowed}, got {text!r}") from None
        if not (low < value if above else low <= value) or not value <= high:  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be a number {allowed}, got {text}")
        return value

    return parse


positive_float = float_range(0.0, FLOAT32_MAX, above=True)
non_negative_float = float_range(0.0, FLOAT32_MAX)
probability = float_range(0.0, 1.0)  # a drop rate, a mask fraction
seconds = float_range(0.0, 7 * 24 * 3600.0, above=True)  # a wait or a budget: up to a week


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


def run_folder(is_run_entry: Callable[[str], bool]) -> Callable[[str], str]:
    """An argparse type: :func:`output_dir` for a run that replaces the entries of its folder
    that ``is_run_entry`` names (``checkpoint.pt``, ``seed_<k>``); no other output may lie there."""

    def parse(text: str) -> str:
        return output_dir(text)

    parse.is_run_entry = is_run_entry
    parse.__name__ = "folder"
    return parse


def _resolved(text: str) -> Path:
    """``text`` as the file system names it: relative paths, ``..`` and symbolic links
    resolved (as far as the path exists)."""
    return Path(text).expanduser().resolve()


def check_paths(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse (``parser.error``: one line, exit 2, before any work) an output that would
    replace what the command reads or another output writes, the paths compared once
    resolved:

    * an output that is an input (a file or a folder);
    * an output folder that holds an input (its run writes and clears entries there);
    * an output file inside an input folder, where a file already is;
    * an output file among the entries another output's run folder replaces
      (:func:`run_folder`'s ``is_run_entry``).

    The options are told apart by their types: :func:`existing_path`,
    :func:`dataset_argument` (a ``.npz`` path, or a name: the files it is read from,
    :func:`~cl2gnn._dataset_files.dataset_inputs`) and :func:`config_file` read;
    :func:`output_file`, :func:`output_dir` and :func:`run_folder` write."""
    inputs, outputs, named = [], [], []
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if not action.option_strings or value is None:
            continue
        option, kind, is_run_entry = (
            action.option_strings[0],
            action.type,
            getattr(action.type, "is_run_entry", None),
        )
        if kind in (existing_path, dataset_argument, config_file):
            text = getattr(value, "path", value)  # a --config file's fields remember it
            if kind is not dataset_argument or text.endswith(".npz"):
                inputs.append((option, text, _resolved(text)))
            else:  # a name: the files it is read from (after the options named)
                named.extend(
                    (f"{option} {text}", str(path), path.resolve())
                    for path in dataset_inputs(text, getattr(args, "root", None))
                )
        elif kind in (output_file, output_dir) or is_run_entry is not None:
            outputs.append((option, value, _resolved(value), kind is not output_file, is_run_entry))
    inputs += named
    for option, text, path, folder, _ in outputs:
        for read, read_text, source in inputs:
            if path == source:
                parser.error(
                    f"argument {option}: {text!r} is what {read} reads; choose another path"
                )
            if folder and source.is_relative_to(path):
                parser.error(
                    f"argument {option}: {text!r} holds {read_text!r}, which {read} reads; "
                    "choose a folder that does not hold the input"
                )
            if not folder and path.is_relative_to(source) and path.exists():
                parser.error(
                    f"argument {option}: {text!r} would replace a file in {read_text!r}, "
                    f"which {read} reads; choose a path outside it"
                )
        for writer, writer_text, run, _, is_run_entry in outputs:
            if (
                is_run_entry is None
                or writer == option
                or not path.is_relative_to(run)
                or path == run
            ):
                continue
            if is_run_entry(path.relative_to(run).parts[0]):
                parser.error(
                    f"argument {option}: {text!r} is among what {writer} {writer_text!r} "
                    "replaces with each run; choose a path outside it"
                )


def json_text(value: object, indent: int | None = 2) -> str:
    """``value`` as JSON a strict reader takes: a float that is not a number (an untrained
    run's final loss, of which there is none) is written ``null``, never ``NaN``, which is
    not JSON (the library stops a run at any other non-finite value)."""

    def plain(item: object) -> object:
        if isinstance(item, float) and not math.isfinite(item):
            return None
        if isinstance(item, dict):
            return {key: plain(v) for key, v in item.items()}
        if isinstance(item, list | tuple):
            return [plain(v) for v in item]
        return item

    return json.dumps(plain(value), indent=indent, allow_nan=False)


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
