"""The core of a training run's configuration, :class:`NodeConfig`: the optimiser, the views,
the built-in encoder, the batching; a method's own options travel in it as ``options``
and are checked by the method (:class:`~cl2gnn.node.methods.MethodOptions`). The papers'
configurations and method ``auto``'s candidates are data, in :mod:`cl2gnn.node.presets`.

Standard library only: the ``cl2gnn`` command reads the fields' names and checks before
torch is imported.
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from types import MappingProxyType
from typing import Any

from .._checks import (
    COUNT_MAX,
    REFUSED,
    Check,
    boolean,
    each,
    integer,
    number,
    one_of,
    optional,
    per_view,
    probability,
)
from .._torchrun import MODES

ENCODERS = ("gcn", "sage", "gat")
ACTIVATIONS = ("relu", "prelu", "rrelu", "elu", "none")  # "none": a linear encoder
# what the probe reads: the last layer, both layers (jumping knowledge), or every layer with
# the input features, each unit-normalised
EMBEDDINGS = ("last", "concat", "layers")
# the bounds of the fields, each past any published configuration by a wide margin: a run
# of a million epochs; 256 layers (the depth studies go to 64); a layer 16,384 wide (the
# widest published, GraphACL's, is 8,192); a learning rate of 1 (Adam moves every weight by
# about that much a step) and a weight decay of 1; counts the graph bounds at run time (a
# batch, a fan-out) at what an int32 index holds
MAX_EPOCHS, MAX_DEPTH, MAX_WIDTH = 10**6, 256, 16_384
WIDTH = integer(1, MAX_WIDTH)  # a layer's width (a method's heads and predictors too)


def _fan_out(value: object) -> object:
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    return int(value) if whole and (1 <= value <= COUNT_MAX or value == -1) else REFUSED


FAN_OUT = Check(f"an integer in [1, {COUNT_MAX}] or -1 (all)", _fan_out)


@dataclass(frozen=True, init=False)
class NodeConfig:
    """One training run's settings, every field checked when the configuration is made
    (``ValueError`` naming the field, the value and what is allowed); :meth:`with_overrides`
    changes some of them.

    Optimisation: ``learning_rate``, ``weight_decay``, ``epochs`` (``0``: the encoder at its
    initialisation, a baseline); a linear warm-up over ``lr_warmup`` epochs (at most
    ``epochs``), then constant or, with ``lr_cosine``, a cosine decay to zero at the last
    epoch.

    Views: per view ``(view 1, view 2)`` (a single number: both views), the probability of
    dropping an edge (``drop_edge``) and of masking a feature column (``drop_feature``);
    ``normalize_features`` row-normalises the input (PyG's ``NormalizeFeatures``, as the
    GRACE and GCA code do): inside the built-in encoder, before an encoder of one's own.

    The built-in encoder (:class:`~cl2gnn.node.GraphEncoder`): ``encoder`` (``"gcn"``,
    ``"sage"`` or ``"gat"``), ``layers`` graph convolutions, the last ``out_channels`` wide
    and the others ``hidden_channels`` (``None``: ``2 · out_channels``; PyG's names),
    ``activation``, ``out_activation`` (the activation after the last layer too),
    ``batch_norm`` (before each activation: none after a last layer without one) with
    ``batch_norm_momentum`` (torch's: the weight of the batch's statistics in the running
    ones), ``self_loops`` (GCN's added self-loops) and
    what the probe reads (``embedding``: ``"last"``, ``"concat"`` or ``"layers"``). With an
    encoder of one's own they keep their defaults (``default_config(graph, method,
    encoder=...)`` leaves them so).

    Mini-batches (``batch_size`` set; ``None``: full-batch): seed nodes per step over all
    processes, in-neighbors sampled per node and hop (``num_neighbors``, one per layer of
    the encoder, ``-1``: all; ``None``: 10 per layer, :meth:`fan_outs`), and how a process
    group shares its negatives (``distributed``: ``"gather"`` or ``"ring"``).

    The method's own options (``options``, a mapping of names to values: ``temperature``,
    ``ema_decay``, ...): the method that trains reads and checks their values
    (:meth:`~cl2gnn.node.NodeMethod.Options`) when the run is planned; a keyword that is
    neither a field nor any registered method's option is refused where it is written,
    naming the closest name (``NodeConfig(epoch=50)``: did you mean ``epochs``?).
    :meth:`with_overrides` and :func:`config_from_dict` put every option name there.

    ``preset``: what the configuration started from, in words (``default_config`` names the
    published or general configuration it took); a label, not compared.
    """

    learning_rate: float = 5e-4
    weight_decay: float = 1e-5
    epochs: int = 200
    lr_warmup: int = 0
    lr_cosine: bool = False
    patience: int | None = None
    drop_edge: tuple[float, float] = (0.2, 0.4)
    drop_feature: tuple[float, float] = (0.3, 0.4)
    normalize_features: bool = False
    encoder: str = "gcn"
    layers: int = 2
    out_channels: int = 128
    hidden_channels: int | None = None
    activation: str = "relu"
    out_activation: bool = True
    batch_norm: bool = False
    batch_norm_momentum: float = 0.1
    self_loops: bool = True
    embedding: str = "last"
    batch_size: int | None = None
    num_neighbors: tuple[int, ...] | None = None
    distributed: str = "gather"
    preset: str | None = field(default=None, compare=False)
    options: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, *, options: Mapping[str, Any] | None = None, **settings: Any) -> None:
        """Every field by name; any other name is one of the method's options, as in
        ``options`` (``NodeConfig(epochs=50, temperature=0.5)`` is
        ``NodeConfig(epochs=50, options={"temperature": 0.5})``)."""
        if options is not None and (
            not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options)
        ):
            raise ValueError(
                f"NodeConfig.options must be a mapping of option names to values, got {options!r}"
            )
        named = {k: v for k, v in settings.items() if k not in FIELDS}
        check_option_names(named)
        options = {**(options or {}), **named}
        for name, value in DEFAULTS.items():
            object.__setattr__(self, name, check_field(name, settings.get(name, value)))
        object.__setattr__(self, "options", MappingProxyType(options))
        if 0 < self.epochs < self.lr_warmup:  # epochs=0 trains nothing: no rate to reach
            raise ValueError(
                f"NodeConfig.lr_warmup {self.lr_warmup} is longer than the run (epochs "
                f"{self.epochs}): the learning rate would never reach {self.learning_rate:g}; "
                f"set lr_warmup to at most the epochs (with_overrides(epochs={self.epochs}, "
                f"lr_warmup={self.epochs // 10}); on the command line --lr-warmup) or train longer"
            )

    def fan_outs(self, layers: int | None = None) -> tuple[int, ...]:
        """In-neighbors sampled per node at each hop of an encoder ``layers`` deep (``None``:
        the built-in encoder's ``layers``): ``num_neighbors``, else 10 a hop; ``ValueError``
        unless ``num_neighbors`` gives one fan-out per layer."""
        layers = self.layers if layers is None else layers
        if self.num_neighbors is not None and len(self.num_neighbors) != layers:
            raise ValueError(
                f"NodeConfig.num_neighbors needs one fan-out per layer ({layers}), "
                f"got {list(self.num_neighbors)}"
            )
        return self.num_neighbors or (10,) * layers

    def with_overrides(self, **changes) -> NodeConfig:
        """A copy with the given fields changed, each checked (``None`` sets a field to
        ``None`` where it allows it), and the given method options set (a name that is not a
        field; ``None`` is a value there too: ``num_keys=None``, the exact uniformity
        term)."""
        return config_from_dict(changes, self)

    def as_dict(self) -> dict:
        """The fields and the options, in one flat mapping (what :func:`config_from_dict`
        reads back)."""
        flat = {name: getattr(self, name) for name in FIELDS}
        return {**flat, **self.options}


# what each field allows: the one place a configuration's core is checked (the command,
# --config files and the benchmarks' configuration lists all go through check_field)
FIELDS: dict[str, Check] = {
    "learning_rate": number(0.0, 1.0, above=True),
    "weight_decay": number(0.0, 1.0),
    "epochs": integer(0, MAX_EPOCHS),
    "lr_warmup": integer(0, MAX_EPOCHS),
    "lr_cosine": boolean,
    "patience": optional(integer(1, MAX_EPOCHS)),
    "drop_edge": per_view(probability),
    "drop_feature": per_view(probability),
    "normalize_features": boolean,
    "encoder": one_of(*ENCODERS),
    "layers": integer(1, MAX_DEPTH),
    "out_channels": WIDTH,
    "hidden_channels": optional(WIDTH),
    "activation": one_of(*ACTIVATIONS),
    "out_activation": boolean,
    "batch_norm": boolean,
    "batch_norm_momentum": number(0.0, 1.0),
    "self_loops": boolean,
    "embedding": one_of(*EMBEDDINGS),
    "batch_size": optional(integer(1)),
    "num_neighbors": optional(
        each(FAN_OUT, f"a list of integers in [1, {COUNT_MAX}] or -1 (all), one per layer")
    ),
    "distributed": one_of(*MODES),
    "preset": optional(Check("a string", lambda v: v if isinstance(v, str) else REFUSED)),
}


# each field's default: the class's
DEFAULTS = {f.name: f.default for f in dataclass_fields(NodeConfig) if f.name != "options"}


def check_field(name: str, value: object) -> object:
    """``value`` as field ``name`` of :class:`NodeConfig` holds it (a list as a tuple, one
    probability as both views'), or ``ValueError`` naming the field, the value and what is
    allowed."""
    if name not in FIELDS:
        raise ValueError(f"NodeConfig has no field {name!r}; its fields: {', '.join(FIELDS)}")
    return FIELDS[name](value, f"NodeConfig.{name}")


# the registered methods' option names: a function the package installs
# (cl2gnn.node.__init__, from the methods' registry, loaded with torch on the first call),
# so that this module stays torch-free and imports no method
option_names: Callable[[], tuple[str, ...]] = tuple


def check_option_names(names) -> None:
    """``ValueError`` naming the first of ``names`` that is neither a :class:`NodeConfig`
    field nor an option of a registered method (:data:`option_names`), and the closest name
    that is (a typo is refused where it is written, not ignored)."""
    unknown = [name for name in names if name not in FIELDS]
    if not unknown:
        return
    known = (*FIELDS, *option_names())
    for name in unknown:
        if name not in known:
            close = difflib.get_close_matches(str(name), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"NodeConfig has no field {name!r} and no method has an option of that name{hint}"
            )


def config_from_dict(entries: Mapping, base: NodeConfig | None = None) -> NodeConfig:
    """``base`` (default: :class:`NodeConfig`'s defaults) with the fields of ``entries``
    (a ``--config`` file's mapping, :meth:`NodeConfig.as_dict`'s) changed, each checked, and
    its other names set among the method's options (checked by the method)."""
    if not isinstance(entries, Mapping):
        raise ValueError(f"a configuration must be a mapping of NodeConfig fields, got {entries!r}")
    base = base or NodeConfig()
    if "options" in entries:
        raise ValueError("a configuration's mapping is flat: give the options' names as keys")
    core = {name: value for name, value in entries.items() if name in FIELDS}
    options = {name: value for name, value in entries.items() if name not in FIELDS}
    check_option_names(options)
    return replace(base, **core, options={**base.options, **options})
