"""What a loss is given: two view batches or features with a graph, its options, and under
a process group its rank's rows of the global batch.

:class:`FunctionalLoss` is the module face of a functional loss, its options read off the
functional's signature; :class:`GraphLoss` takes both input forms.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import Tensor
from typing_extensions import TypedDict, Unpack

from .._registry import Example
from .._validation import (
    as_edge_index,
    check_features,
    check_same_shape,
)
from ..distributed import Shard, checked_shard, is_distributed
from ..graphs import cached_pair_graph, pair_graph

T = TypeVar("T")


class Graph(TypedDict, total=False):
    """The positives of a single feature tensor ``z1 = x``, the keywords of a functional
    loss after its options (see :func:`resolve_views`): ``edge_index`` ``[2, E]`` (+
    ``edge_weight`` ``[E]``), e.g. kNN positives, or ``sample_id`` ``[N]`` (rows sharing an
    id are positives)."""

    edge_index: Tensor | None
    edge_weight: Tensor | None
    sample_id: Tensor | None


class FunctionalLoss(torch.nn.Module):
    """The module face of a functional loss (``functional``, decorated with
    :func:`~cl2gnn._options.checks_options`): its options are the functional's parameters
    that ``forward`` does not take, in the functional's order and with its defaults. A
    subclass that defines no ``__init__`` gets one taking exactly those options, which
    checks them and keeps them as plain attributes. They are checked once, where the loss
    is built, and again at the next call after one is set (an option set after
    construction applies, or fails, at the next call); a call passes them to the
    functional's unchecked form (:meth:`call_functional`)."""

    functional: Callable[..., Tensor]
    option_names: tuple[str, ...] = ()
    _check_option_values: Callable[..., None]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "functional" not in cls.__dict__:
            return
        inputs = inspect.signature(cls.forward).parameters
        options = [
            parameter.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for name, parameter in inspect.signature(cls.functional).parameters.items()
            if name not in inputs and parameter.default is not inspect.Parameter.empty
        ]
        cls.option_names = tuple(option.name for option in options)
        check_options = cls.functional.check_options  # the checks of the functional's options
        cls._check_option_values = staticmethod(check_options)
        if "__init__" not in cls.__dict__:
            self = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
            signature = inspect.Signature([self, *options], return_annotation=None)

            def __init__(self, *args, **kwargs) -> None:
                torch.nn.Module.__init__(self)
                bound = signature.bind(self, *args, **kwargs)
                bound.apply_defaults()
                options = dict(bound.arguments)
                del options["self"]
                check_options(**options)
                for name, value in options.items():
                    setattr(self, name, value)
                object.__setattr__(self, "_options_checked", True)

            __init__.__signature__ = signature
            __init__.__doc__ = f"Options: {', '.join(cls.option_names)}."
            cls.__init__ = __init__

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in self.option_names:
            object.__setattr__(self, "_options_checked", False)

    def _options(self) -> dict[str, Any]:
        """The options as they are now, checked where one was set since the last check."""
        options = {name: getattr(self, name) for name in self.option_names}
        if not getattr(self, "_options_checked", False):
            self._check_option_values(**options)
            object.__setattr__(self, "_options_checked", True)
        return options

    def call_functional(self, *args, **kwargs) -> Tensor:
        """``functional(*args, **kwargs, **options)`` without the functional's own checks of
        the options, which :meth:`_options` made."""
        return type(self).functional.unchecked(*args, **kwargs, **self._options())

    def extra_repr(self) -> str:  # the options as they are, checked or not
        return ", ".join(f"{name}={getattr(self, name)!r}" for name in self.option_names)


class GraphLoss(FunctionalLoss):
    """Calls ``functional(z1, z2, **graph, **options)`` (``graph``: :class:`Graph`'s
    keywords) with the current values of the options."""

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        """Two view batches of ``n`` rows, and the same rows stacked with their pair graph."""
        z1, z2 = (torch.randn(n, d, generator=generator, dtype=torch.float64) for _ in "12")
        stacked = torch.cat([z1, z2])
        return {
            "views": Example(cls, (z1, z2)),
            "edge_index": Example(cls, (stacked,), {"edge_index": pair_graph(n, 2)}),
            "sample_id": Example(cls, (stacked,), {"sample_id": torch.arange(n).repeat(2)}),
        }

    def forward(self, z1: Tensor, z2: Tensor | None = None, **graph: Unpack[Graph]) -> Tensor:
        return self.call_functional(z1, z2, **graph)


def two_view_batches(z2: Tensor | None, graph: Graph) -> bool:
    """Whether a loss was given two view batches (no graph)."""
    return z2 is not None and graph.get("edge_index") is None and graph.get("sample_id") is None


def resolve_views(
    z1: Tensor,
    z2: Tensor | None = None,
    edge_index: Tensor | None = None,
    edge_weight: Tensor | None = None,
    sample_id: Tensor | None = None,
    min_rows: int = 1,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """``(x [N, d], edge_index [2, E], edge_weight)`` from either of the two input forms.

    * two view batches ``z1, z2`` (``[B, d]`` each): ``x = cat([z1, z2])`` with the pair
      graph linking row ``b`` and row ``B + b``;
    * features ``z1 = x`` with an augmentation graph: ``edge_index`` (+ ``edge_weight``),
      e.g. kNN positives, or ``sample_id`` (rows sharing an id are positives).

    ``min_rows``: the fewest rows of ``z1`` (0 on a rank, whose counts :func:`views_shard`
    checks across ranks).
    """
    if z2 is not None:
        if edge_index is not None or sample_id is not None:
            raise ValueError("pass either two view batches (z1, z2) or a graph, not both")
        check_features(z1, "z1", min_rows)
        check_features(z2, "z2", min_rows)
        check_same_shape(z1, z2)
        return torch.cat([z1, z2]), cached_pair_graph(z1.size(0), device=z1.device), None
    check_features(z1, "x", min_rows)
    if (edge_index is None) == (sample_id is None):
        raise ValueError("with a single feature tensor pass exactly one of edge_index, sample_id")
    if sample_id is not None:
        if sample_id.shape != (z1.size(0),):
            raise ValueError(
                f"sample_id must have shape [N] = [{z1.size(0)}], got {tuple(sample_id.shape)}"
            )
        return z1, pair_graph(sample_id=sample_id.to(z1.device)), None
    edge_index, edge_weight = as_edge_index(edge_index, edge_weight, z1.size(0), non_negative=True)
    return z1, edge_index, edge_weight


def views_shard(
    z1: Tensor, z2: Tensor | None, distributed: str | None, check: Callable[[int], T], call: str
) -> tuple[T, Shard | None]:
    """``check(min_rows)`` (the loss's input checks: ``min_rows`` the fewest rows of ``z1``)
    and, under a process group of several ranks, the rows per rank of the stacked views
    ``x`` (``cat([z1, z2])``, or ``z1``), ``None`` otherwise. Across ranks the checks'
    outcome and the row counts are decided together, before any other collective
    (:func:`~cl2gnn.distributed.shard.checked_shard`), so that one rank's invalid input (a
    NaN, a graph out of range) or missing rows fail on every rank alike, naming that rank,
    instead of leaving the others in a collective; ``call`` (the loss's name) must be the
    same on every rank, with the mode."""
    if not is_distributed(distributed):
        return check(1), None
    result, shard = checked_shard(
        z1, lambda: check(0), 1 if z2 is not None else 2, f"{call} ({distributed})"
    )
    views = 1 if z2 is None else 2
    return result, Shard(shard.rank, tuple(views * size for size in shard.sizes))


def shard_of_views(
    z1: Tensor, z2: Tensor | None, graph: Graph, distributed: str | None, call: str
) -> tuple[tuple[Tensor, Tensor, Tensor | None], Shard | None]:
    """:func:`views_shard` of the input checks of :func:`resolve_views`: the stacked views
    ``(x, edge_index, edge_weight)`` and this rank's shard (``None`` in one process)."""
    return views_shard(
        z1, z2, distributed, lambda rows: resolve_views(z1, z2, **graph, min_rows=rows), call
    )


def share_of_mean(total: Tensor, rows: int, shard: Shard | None) -> Tensor:
    """``total / rows`` for a sum over this process's ``rows`` anchors; across ranks
    ``world_size × total / N_global``: ``world_size ×`` this rank's share of the global
    mean, so that DDP's gradient averaging yields the single-process gradient and the mean
    of the ranks' values is the global loss (lightly's convention)."""
    return total / rows if shard is None else total * (shard.world_size / shard.total)
