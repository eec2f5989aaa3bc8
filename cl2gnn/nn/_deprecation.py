"""``tau``, the operators' former name for ``temperature``: still accepted, with a warning."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable

MESSAGE = "tau is deprecated, use temperature"


def accepts_tau(init: Callable) -> Callable:
    """Let ``__init__`` take ``tau=`` for its ``temperature`` argument (a
    ``DeprecationWarning``; a ``TypeError`` when both are given)."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs) -> None:
        if "tau" in kwargs:
            tau = kwargs.pop("tau")
            if "temperature" in signature.bind_partial(self, *args, **kwargs).arguments:
                raise TypeError("pass temperature or its deprecated alias tau, not both")
            warnings.warn(MESSAGE, DeprecationWarning, stacklevel=2)
            kwargs["temperature"] = tau
        init(self, *args, **kwargs)

    return wrapper


def _get_tau(self) -> float:
    warnings.warn(MESSAGE, DeprecationWarning, stacklevel=2)
    return self.temperature


def _set_tau(self, value: float) -> None:
    warnings.warn(MESSAGE, DeprecationWarning, stacklevel=2)
    self.temperature = value


tau = property(_get_tau, _set_tau, doc="Deprecated alias of ``temperature``.")
