"""Options written once: a parameter's annotation carries its check.

An option is declared by one parameter, ``temperature: Temperature = 0.5``, whose
``Annotated`` metadata is its check ``check(value, name)`` (a ``ValueError`` naming it).
The same rule holds for operators and losses: an option is a plain attribute, checked at
construction and, set later, at the next call.

* a functional loss decorated with :func:`checks_options` checks the options it is given
  at every call; a loss module built on it (:class:`~cl2gnn.losses.FunctionalLoss`) takes
  its options from the functional's signature;
* an operator calls :func:`check_options` on itself at the start of every call, for the
  annotated parameters of its ``__init__``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, get_origin, get_type_hints

from ._checks import Check, finite, integer, one_of, optional, positive, temperature
from ._torchrun import MODES

Finite = Annotated[float, finite]
Positive = Annotated[float, positive]
Temperature = Annotated[float, temperature]
Distributed = Annotated[str | None, optional(one_of(*MODES))]
TileSize = Annotated[int, integer(1)]


@functools.cache
def option_checks(function: Callable) -> dict[str, Check]:
    """The checks in the ``Annotated`` parameters of ``function``, by parameter name."""
    hints = get_type_hints(function, include_extras=True)
    return {
        name: next(meta for meta in hint.__metadata__ if callable(meta))
        for name, hint in hints.items()
        if get_origin(hint) is Annotated and any(callable(meta) for meta in hint.__metadata__)
    }


def check_options(module: object) -> None:
    """Check ``module``'s options, the annotated parameters of its class's ``__init__``,
    as they are now (an operator calls this at the start of every call)."""
    for name, check in option_checks(type(module).__init__).items():
        check(getattr(module, name), name)


def checks_options(joint: Callable[..., None] | None = None) -> Callable[[Callable], Callable]:
    """Decorate a functional loss so that every call checks the options it is given: each
    annotated parameter by its check, then ``joint`` (the constraints between options) on
    all of them. ``functional.check_options(**options)`` runs the same checks alone."""

    def decorate(function: Callable) -> Callable:
        signature = inspect.signature(function)

        def check(arguments: dict[str, Any]) -> None:
            checks = option_checks(function)
            for name, value in arguments.items():
                if name in checks:
                    checks[name](value, name)
            if joint is not None:
                names = inspect.signature(joint).parameters
                defaults = {n: signature.parameters[n].default for n in names}
                joint(**{**defaults, **{n: arguments[n] for n in names if n in arguments}})

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            check(signature.bind(*args, **kwargs).arguments)
            return function(*args, **kwargs)

        wrapper.check_options = lambda **options: check(options)
        return wrapper

    return decorate
