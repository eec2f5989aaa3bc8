"""One vocabulary of argument checks, for every option the library takes: an operator's or a
loss's (:mod:`cl2gnn._options`), a :class:`~cl2gnn.node.NodeConfig` field, a method's option
and a command-line flag (:func:`argument`). Standard library only: the command line reads it
before torch is imported.

A check is called as ``check(value, name)`` and returns the value as the library keeps it
(an integer as ``int``, a pair of probabilities as a tuple), or raises ``ValueError``:
``"<name> must be <allowed>, got <value>"``, ``allowed`` also its attribute. The bounds no
number may pass, whatever it counts or scales:

* a count (nodes, keys, a batch, a fan-out, images) is what an int32 index holds
  (:data:`COUNT_MAX`): PyG's and the samplers' indices, and torch's sizes past it, overflow;
* a real number is what float32 holds (:data:`FLOAT32_MAX`), the precision the library
  computes in: a larger one becomes ``inf`` where it meets a tensor.
"""

from __future__ import annotations

import argparse
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

COUNT_MAX = 2**31 - 1
SEED_MAX = 2**32 - 1  # the largest seed NumPy and scikit-learn take
FLOAT32_MAX = 3.4028234663852886e38
# Below this, float32 logits of unit rows (up to 1/τ) carry rounding errors of order
# eps/τ > 1e-3: the softmax's differences of logits, and so every loss, become noise.
MIN_TEMPERATURE = 1e-4


@dataclass(frozen=True)
class Check:
    """``convert(value)`` where it is allowed (``None``: not), described by ``allowed``."""

    allowed: str
    convert: Callable[[Any], Any]

    def __call__(self, value: Any, name: str) -> Any:
        converted = self.convert(value)
        if converted is REFUSED:
            raise ValueError(f"{name} must be {self.allowed}, got {value!r}")
        return converted


REFUSED = object()  # what a ``convert`` returns for a value it does not allow


def _span(low: float, high: float, above: bool) -> str:
    return f"in {'(' if above else '['}{low:g}, {high:g}]"


def integer(low: int = 0, high: int = COUNT_MAX) -> Check:
    """An integer (NumPy's too; not a bool) in ``[low, high]``."""

    def convert(value):
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        return int(value) if ok and low <= value <= high else REFUSED

    return Check(f"an integer in [{low}, {high}]", convert)


def number(low: float = -FLOAT32_MAX, high: float = FLOAT32_MAX, *, above: bool = False) -> Check:
    """A finite real number (NumPy's too; not a bool) in ``[low, high]`` (``above``:
    ``(low, high]``)."""

    def convert(value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return REFUSED
        value = float(value)
        inside = (low < value if above else low <= value) and value <= high  # NaN fails
        return value if math.isfinite(value) and inside else REFUSED

    return Check(f"a number {_span(low, high, above)}", convert)


finite = Check("a finite number (within float32's range)", number().convert)
positive = number(0.0, above=True)
non_negative = number(0.0)
probability = number(0.0, 1.0)
temperature = Check(
    f"a number in [{MIN_TEMPERATURE:g}, 100] (a smaller one overflows the logits, a larger "
    "one makes the loss a constant)",
    number(MIN_TEMPERATURE, 100.0).convert,
)


def open_unit_interval() -> Check:
    """A number strictly between 0 and 1 (a mixture weight)."""
    inside = number(0.0, 1.0, above=True)
    return Check("a number in (0, 1)", lambda v: REFUSED if v == 1 else inside.convert(v))


def one_of(*choices: Any) -> Check:
    return Check(
        f"one of {', '.join(map(repr, choices))}", lambda v: v if v in choices else REFUSED
    )


def optional(check: Check) -> Check:
    """``check``, or ``None``."""
    return Check(f"{check.allowed} or None", lambda v: None if v is None else check.convert(v))


boolean = Check("true or false", lambda v: v if isinstance(v, bool) else REFUSED)
callable_or_none = Check("callable or None", lambda v: v if v is None or callable(v) else REFUSED)


def per_view(check: Check) -> Check:
    """Two values, one per view, as a tuple; a single one is both views'."""

    def convert(value):
        values = tuple(value) if isinstance(value, list | tuple) else (value, value)
        converted = tuple(check.convert(v) for v in values)
        return converted if len(values) == 2 and REFUSED not in converted else REFUSED

    return Check(f"{check.allowed} or two of them (one per view)", convert)


def each(check: Check, what: str) -> Check:
    """A non-empty list of values each allowed by ``check``, as a tuple (``what``: the
    description)."""

    def convert(value):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
            return REFUSED
        converted = tuple(check.convert(v) for v in value)
        return REFUSED if REFUSED in converted else converted

    return Check(what, convert)


def argument(check: Check, parse: Callable[[str], Any] = float) -> Callable[[str], Any]:
    """An argparse ``type=``: the text parsed by ``parse``, then ``check``ed, refused with
    argparse's own one-line message (``argument --x: must be ..., got ...``)."""

    def parse_and_check(text: str):
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {check.allowed}, got {text!r}") from None
        converted = check.convert(value)
        if converted is REFUSED:
            raise argparse.ArgumentTypeError(f"must be {check.allowed}, got {text}")
        return converted

    return parse_and_check


def first_line(error: BaseException) -> str:
    """An exception's message for one line (torch's can run to many), else its type's name:
    what a one-line refusal quotes of an error underneath it."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
