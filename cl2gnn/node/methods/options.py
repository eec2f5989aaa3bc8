"""A method's own options: a frozen dataclass per method (its ``Options``), each field's
check in its metadata (:func:`option`), filled from a configuration's ``options`` and
checked when the method is made (:meth:`MethodOptions.of`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..._checks import Check


def option(default: Any, check: Check, *, others_refuse: bool = False) -> Any:
    """A field of a method's options: its default and its check (``cl2gnn._checks``).
    ``others_refuse``: a method without the option refuses a run that sets it (not
    ``None``), where ignoring it would mislead (a speed-up or an approximation the run
    would not have); other methods' options are otherwise left to them."""
    return field(default=default, metadata={"check": check, "others_refuse": others_refuse})


@dataclass(frozen=True)
class MethodOptions:
    """The options of a method that has none; a method's ``Options`` subclasses it, each
    field declared by :func:`option`."""

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, f.metadata["check"](getattr(self, f.name), f.name))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def of(cls, options: Mapping[str, Any], method: str) -> MethodOptions:
        """The options of method ``method`` from a configuration's ``options``: those it has
        (the others at their defaults; options of other methods are theirs, so that one
        configuration serves several methods), ``ValueError`` naming a value its check
        refuses, naming the method and ``NodeConfig.name``. A name no method has is refused by
        :func:`~cl2gnn.node.config.check_option_names`."""
        own = {name: value for name, value in options.items() if name in cls.names()}
        try:
            return cls(**own)
        except ValueError as error:
            raise ValueError(f"method {method!r}: NodeConfig.{error}") from None
