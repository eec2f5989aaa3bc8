"""Options written once: a parameter's annotation carries its check.

An option is declared by one parameter, ``temperature: Temperature = 0.5``, whose
``Annotated`` metadata is its check ``check(value, name)`` (a ``ValueError`` naming it).
The same rule holds for operators and losses: an option is a plain attribute, checked at
construction and, set later, at the next call. The checks are derived once (from the
annotations, when a function is decorated or a class defined), never at a call: a call
whose options were checked and not set since reads one flag, so that a training step
issues no host work for them and ``torch.compile`` traces none of it.

* a functional loss decorated with :func:`checks_options` checks the options it is given
  at every call, with checks made when it was decorated; a loss module built on it
  (:class:`~cl2gnn.losses.FunctionalLoss`) checks its options where it is built and after
  one is set, and calls the functional's unchecked form;
* an operator (an :class:`OptionsChecked` module) calls :func:`check_options` on itself at
  the start of every call, which checks the annotated parameters of its ``__init__`` only
  where one was set since the last check.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, get_origin, get_type_hints

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


class OptionsChecked:
    """A module whose options are the annotated parameters of its class's ``__init__``:
    setting one (in ``__init__`` too) marks the options unchecked, and :func:`check_options`
    checks them once then. Put it before the torch base class:
    ``class AlignConv(OptionsChecked, MessagePassing)``."""

    _option_checks: ClassVar[tuple[tuple[str, Check], ...]] = ()
    _option_names: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._option_checks = tuple(option_checks(cls.__init__).items())
        cls._option_names = frozenset(name for name, _ in cls._option_checks)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in self._option_names:
            object.__setattr__(self, "_options_checked", False)

    def check_joint_options(self) -> None:
        """The constraints between options (a subclass's), run with their checks."""


def check_options(module: OptionsChecked) -> None:
    """Check ``module``'s options as they are now, where one was set since the last check
    (an operator calls this at the start of every call; then it reads one flag)."""
    if getattr(module, "_options_checked", False):
        return
    for name, check in module._option_checks:
        check(getattr(module, name), name)
    module.check_joint_options()
    object.__setattr__(module, "_options_checked", True)


def checks_options(joint: Callable[..., None] | None = None) -> Callable[[Callable], Callable]:
    """Decorate a functional loss so that every call checks the options it is given: each
    annotated parameter by its check, then ``joint`` (the constraints between options) on
    all of them. ``functional.check_options(**options)`` runs the same checks alone, and
    ``functional.unchecked`` is the function without them (for a caller that checked its
    options once, a loss module). The checks, the parameters' order and ``joint``'s
    parameters and defaults are read here, once."""

    def decorate(function: Callable) -> Callable:
        parameters = inspect.signature(function).parameters
        checks = option_checks(function)
        positional = tuple(
            name
            for name, parameter in parameters.items()
            if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        )
        joint_defaults = {}
        if joint is not None:
            joint_defaults = {
                name: parameters[name].default for name in inspect.signature(joint).parameters
            }

        def check(arguments: dict[str, Any]) -> None:
            for name, value in arguments.items():
                if name in checks:
                    checks[name](value, name)
            if joint is not None:
                joint(**{name: arguments.get(name, d) for name, d in joint_defaults.items()})

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            given = dict(zip(positional, args, strict=False))
            given.update(kwargs)
            check(given)
            return function(*args, **kwargs)

        wrapper.check_options = lambda **options: check(options)
        wrapper.unchecked = function
        return wrapper

    return decorate
