"""The node methods, one class each, in one registry.

Adding a method is one :class:`NodeMethod` subclass decorated with
``@register_method("name")`` in a module of this package (imported here), and one float64
reference test of its loss; the command's torch-free :data:`cl2gnn.node.names.METHODS` reads
the names off the decorators.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..config import NodeConfig
from ..names import METHODS

# the modules that register the methods (@register_method), imported for that
from . import bgrl, cca_ssg, contrastive, dgi, gbt, gca, graphacl, mvgrl
from .base import REGISTRY, EncoderInput, NodeMethod, ViewBatch, register_method
from .contrastive import CallableObjective, ContrastiveMethod


def method_class(name: str) -> type[NodeMethod]:
    """The registered class of method ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"method must be one of {METHODS}, got {name!r}")
    return REGISTRY[name]


def method_type(
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
) -> type[NodeMethod]:
    """The class that trains ``method``: a registered name's (:func:`method_class`), or for
    an objective ``(z1, z2, h1, h2) -> loss`` :class:`CallableObjective`."""
    return CallableObjective if callable(method) else method_class(method)


def make_method(
    method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
    config: NodeConfig,
    *,
    dim: int,
    num_nodes: int,
    graph: Tensor | None = None,
    distributed: str | None = None,
    encoder: torch.nn.Module | None = None,
) -> NodeMethod:
    """Method ``method`` (a registered name, or an objective ``(z1, z2, h1, h2) -> loss``
    on GRACE's scheme) for an encoder of output width ``dim`` on a graph of ``num_nodes``
    nodes, checked against ``config``:
    sampled keys, mini-batches and a process group only for the methods that take them;
    ``encoder`` is the online encoder (for methods with a target encoder)."""
    cls = method_type(method)
    extra = {"objective": method} if callable(method) else {}
    label = cls.name if cls is not CallableObjective else "a callable objective"
    if config.num_keys is not None and not cls.takes_keys:
        takes = tuple(n for n, c in REGISTRY.items() if c.takes_keys)
        raise ValueError(f"num_keys applies to the methods {takes}, not {label!r}")
    if config.batch_size is not None and not cls.minibatch:
        takes = tuple(n for n, c in REGISTRY.items() if c.minibatch)
        raise ValueError(
            f"method {label!r} keeps a state per node or uses the whole graph's edges as "
            f"positives: mini-batch training takes the methods {takes}"
        )
    if distributed is not None:
        if not cls.spans_ranks:
            takes = tuple(n for n, c in REGISTRY.items() if c.spans_ranks)
            raise ValueError(
                f"method {label!r} does not span the ranks of a process group (its loss needs "
                f"state or pairs a rank does not hold): under torchrun use one of {takes}"
            )
        if config.num_keys is not None:
            raise ValueError("distributed takes no num_keys: the negatives are every rank's")
    return cls(
        config,
        dim=dim,
        num_nodes=num_nodes,
        graph=graph,
        distributed=distributed,
        encoder=encoder,
        **extra,
    )


__all__ = [
    "REGISTRY",
    "ContrastiveMethod",
    "EncoderInput",
    "NodeMethod",
    "ViewBatch",
    "make_method",
    "method_class",
    "method_type",
    "register_method",
]
