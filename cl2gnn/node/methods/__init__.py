"""The node methods, one module each, in one registry.

Adding a method is one module of this package: a :class:`NodeMethod` subclass decorated
with ``@register_method("name")``, its options the annotated keyword parameters of its
``__init__`` (:func:`~cl2gnn.node.methods.options.options_of`), and one float64 reference
test of its loss (``docs/extending.md``). Every module of the package is imported here, so
the decorators fill the registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from torch import Tensor

from ..config import check_option_names
from .base import REGISTRY, EncoderInput, NodeMethod, ViewBatch, register_method
from .options import MethodOptions

for _module in pkgutil.iter_modules(__path__):  # each method registers itself on import
    importlib.import_module(f"{__name__}.{_module.name}")

from .bgrl import BGRL  # noqa: E402  (the classes, registered above)
from .cca_ssg import CCASSG  # noqa: E402
from .contrastive import GRACE, CallableObjective, ContrastiveMethod, InfoNCEMethod  # noqa: E402
from .dgi import DeepGraphInfomax  # noqa: E402
from .gbt import GraphBarlowTwins  # noqa: E402
from .gca import GCA  # noqa: E402
from .graphacl import GraphACL  # noqa: E402
from .mvgrl import MVGRL  # noqa: E402
from .polygcl import PolyGCL  # noqa: E402

METHODS = tuple(sorted(REGISTRY))  # the registered methods' names


def method_class(name: str) -> type[NodeMethod]:
    """The registered class of method ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"method must be one of {tuple(sorted(REGISTRY))}, got {name!r}")
    return REGISTRY[name]


def method_type(
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
) -> type[NodeMethod]:
    """The class that trains ``method``: a registered name's (:func:`method_class`), or for
    an objective ``(z1, z2, h1, h2) -> loss`` :class:`CallableObjective`."""
    return CallableObjective if callable(method) else method_class(method)


def option_names() -> tuple[str, ...]:
    """Every registered method's option names (and a callable objective's), once each: what
    a configuration's ``options`` may name (:func:`~cl2gnn.node.config.check_option_names`).
    Their values are checked by the method that trains alone (its ``Options``)."""
    names = {f.name for cls in (*REGISTRY.values(), CallableObjective) for f in fields(cls.Options)}
    return tuple(sorted(names))


def option_value(name: str, value: Any) -> Any:
    """``value`` of option ``name`` as a method that has the option holds it; ``ValueError``
    (the first method's message) where every method that has it refuses it, or none has it.
    An early check where the method is not known yet (the command's arguments, a
    configuration file): the method that trains checks the value again with its own."""
    checks = [
        f.metadata["check"]
        for cls in (*REGISTRY.values(), CallableObjective)
        for f in fields(cls.Options)
        if f.name == name
    ]
    if not checks:
        check_option_names([name])
    errors = []
    for check in checks:
        try:
            return check(value, f"NodeConfig.{name}")
        except ValueError as error:
            errors.append(error)
    raise errors[0]


def check_method_takes(cls: type[NodeMethod], options: Mapping[str, Any]) -> None:
    """``ValueError`` naming an option set (not ``None``) in ``options`` that method ``cls``
    does not have where the methods that have it declare ``others_refuse``."""
    own = cls.Options.names()
    for name, value in options.items():
        if name in own or value is None:
            continue
        takers = [c for c in REGISTRY.values() if name in c.Options.names()]
        if any(
            f.metadata["others_refuse"] for c in takers for f in fields(c.Options) if f.name == name
        ):
            label = cls.name if cls.name != "callable" else "a callable objective"
            raise ValueError(
                f"{name}={value!r}: method {label!r} does not take it (the methods that do: "
                f"{', '.join(sorted(c.name for c in takers))})"
            )


__all__ = [
    "BGRL",
    "CCASSG",
    "GCA",
    "GRACE",
    "METHODS",
    "MVGRL",
    "REGISTRY",
    "CallableObjective",
    "ContrastiveMethod",
    "DeepGraphInfomax",
    "EncoderInput",
    "GraphACL",
    "GraphBarlowTwins",
    "InfoNCEMethod",
    "MethodOptions",
    "NodeMethod",
    "PolyGCL",
    "ViewBatch",
    "check_method_takes",
    "method_class",
    "method_type",
    "option_names",
    "option_value",
    "register_method",
]
