"""Registries of classes by name, each class added by a decorator where it is defined (as
timm registers its models), with the example calls that ``cl2gnn verify`` and the tests
run on every entry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T", bound=type)


class Example(NamedTuple):
    """One call of a registered module: ``build(**options)`` makes a fresh instance with the
    example's options (updated by ``options``), to be called as ``module(*args, **kwargs)``.
    The first argument is the features (``x``, or the first view), float64 on the CPU."""

    build: Callable[..., Any]
    args: tuple
    kwargs: Mapping[str, Any] = MappingProxyType({})


class Registry(dict):
    """Classes by name. ``@REGISTRY.register`` adds a class under its ``__name__``,
    ``@REGISTRY.register("name")`` under ``name`` (set as its ``name`` attribute too). Each
    class defines ``examples(n, d, generator) -> dict[str, Example]``: calls on ``n`` rows
    of ``d`` features, ``"label": Example`` (a test fails for a class without them)."""

    def register(self, target: T | str) -> T | Callable[[T], T]:
        if isinstance(target, str):
            return lambda cls: self._add(target, cls, named=True)
        return self._add(target.__name__, target)

    def _add(self, name: str, cls: T, named: bool = False) -> T:
        if name in self:
            raise ValueError(f"{name!r} is registered already, as {self[name].__qualname__}")
        if named:
            cls.name = name
        self[name] = cls
        return cls


# cl2gnn.nn.OPERATORS, cl2gnn.losses.PAIR_LOSSES (losses of two view batches, or of
# features with an augmentation graph), cl2gnn.node.methods.REGISTRY
OPERATORS = Registry()
PAIR_LOSSES = Registry()
NODE_METHODS = Registry()
