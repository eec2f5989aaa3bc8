"""A method's own options, written once: the keyword parameters of its ``__init__`` whose
annotation carries a check, ``temperature: Temperature = 0.4`` (the vocabulary of
:mod:`cl2gnn._checks`, as the operators' options in :mod:`cl2gnn._options`). From them each
method class gets its ``Options`` (:func:`options_of`, a frozen dataclass): what a
configuration's ``options`` may set for it, each value checked by that method's own check
(:meth:`MethodOptions.of`). Standard library only."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Annotated, Any, get_origin, get_type_hints

from ..._checks import Check, boolean
from ..._checks import temperature as temperature_check
from ..config import WIDTH

# a marker in an option's annotation: a method without the option refuses a run that sets it
# (not None), where ignoring it would mislead (a speed-up or an approximation the run would
# not have); other methods' options are otherwise left to them
OTHERS_REFUSE = "others_refuse"

Width = Annotated[int, WIDTH]  # a head's or a predictor's width
Temperature = Annotated[float, temperature_check]
Flag = Annotated[bool, boolean]


@dataclass(frozen=True)
class MethodOptions:
    """The options of a method (:func:`options_of` makes each method's subclass), each field
    checked when it is made."""

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
        configuration serves several methods), ``ValueError`` naming the method and
        ``NodeConfig.name`` for a value its check refuses. A name no method has is refused
        where it is written (:func:`~cl2gnn.node.config.check_option_names`)."""
        own = {name: value for name, value in options.items() if name in cls.names()}
        try:
            return cls(**own)
        except ValueError as error:
            raise ValueError(f"method {method!r}: NodeConfig.{error}") from None

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def options_of(init: Callable, owner: str) -> type[MethodOptions]:
    """The ``Options`` of a method whose constructor is ``init``: one field per keyword
    parameter annotated with a :class:`~cl2gnn._checks.Check`, its default the parameter's,
    its check the annotation's (and :data:`OTHERS_REFUSE` where the annotation holds it)."""
    hints = get_type_hints(init, include_extras=True)
    specs = []
    for name, parameter in inspect.signature(init).parameters.items():
        hint = hints.get(name)
        if get_origin(hint) is not Annotated:
            continue
        checks = [meta for meta in hint.__metadata__ if isinstance(meta, Check)]
        if not checks:
            continue
        if parameter.default is inspect.Parameter.empty:
            raise TypeError(f"{owner}: option {name!r} needs a default")
        metadata = {"check": checks[0], "others_refuse": OTHERS_REFUSE in hint.__metadata__}
        specs.append((name, hint, field(default=parameter.default, metadata=metadata)))
    return make_dataclass(f"{owner}Options", specs, bases=(MethodOptions,), frozen=True)
