"""Every rule of what goes with what in a training run, in one place: :func:`check_run`
checks a run's method, configuration, graph, encoder, device and process group together
before anything is built, and returns what the trainer builds from (:class:`RunPlan`).

The rules: the method's own options (its ``Options``); a method that takes the graph's
edges as positives needs edges, without weights; mini-batches and a process group only
for the methods that take them, with no weighted graph and no sampled keys across ranks;
beside an encoder of one's own the built-in encoder's fields at their defaults, and the
graph's weights only where its forward takes them; the exact loss's bfloat16 products on
the CPU, in one process; one fan-out per layer of the encoder. (A configuration's own
fields and their joint rules are :class:`~cl2gnn.node.NodeConfig`'s.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch_geometric.data import Data

from ...distributed import rank_and_world
from ..config import DEFAULTS, NodeConfig, check_option_names
from ..encoders.graph_encoder import ENCODER_ARGUMENTS
from ..encoders.spec import check_config_fits
from ..encoders.user import PROBE_WEIGHTS, check_encoder, uses_edge_weight
from ..inputs import check_feature_scale, check_graph
from ..methods import REGISTRY, NodeMethod, check_method_takes, method_type
from ..methods.options import MethodOptions

DEFAULT_MODE = DEFAULTS["distributed"]  # a process group's negatives, where none is set
# the fields something else reads too: GraphACL's neighbors include the node itself
# (self_loops), and the row normalisation is a data transform before an encoder of one's own
# (cl2gnn.node.encoders.user.feature_transform)
FIELDS_READ_ELSEWHERE = ("self_loops", "normalize_features")
# the fields only the built-in encoder reads: an encoder of one's own would ignore them
BUILTIN_ONLY = tuple(
    field for field in ENCODER_ARGUMENTS.values() if field not in FIELDS_READ_ELSEWHERE
)


def for_own_encoder(config: NodeConfig) -> NodeConfig:
    """``config`` for an encoder of one's own: the built-in encoder's fields
    (:data:`BUILTIN_ONLY`) at their defaults, as :func:`check_own_encoder` requires."""
    defaults = NodeConfig()
    return replace(config, **{field: getattr(defaults, field) for field in BUILTIN_ONLY})


@dataclass(frozen=True)
class RunPlan:
    """What a checked run trains: the method's class and options, the configuration, and
    the sampler's fan-outs (mini-batches; ``None``: full batch)."""

    method: type[NodeMethod]
    options: MethodOptions
    config: NodeConfig
    fan_outs: tuple[int, ...] | None

    def build(self, data: Data, **context) -> NodeMethod:
        """The method this plan checked, on ``data``
        (:meth:`~cl2gnn.node.NodeMethod.build`: ``encoder``, ``views``, ``distributed``,
        ``generator``)."""
        return self.method.build(self.options, self.config, data, **context)


def check_run(
    data: Data,
    method: str | Callable,
    config: NodeConfig,
    *,
    encoder: torch.nn.Module | None = None,
    device: str | torch.device = "cpu",
    distributed: str | None = None,
) -> RunPlan:
    """The run of ``method`` (a registered name, or an objective) on ``data`` with
    ``config``, ``encoder`` (``None``: the built-in one), on ``device``, across ranks where
    ``distributed``: every rule of this module, one ``ValueError`` naming what does not go."""
    check_graph(data)
    if not isinstance(config, NodeConfig):
        raise ValueError(f"config must be a NodeConfig, got {type(config).__name__}")
    check_feature_scale(data.x, config.normalize_features)
    cls = method_type(method)
    check_option_names(config.options)
    check_method_takes(cls, config.options)
    options = cls.Options.of(config.options, cls.name)
    check_method_graph(cls, data)
    check_batching(cls, config, data, options, distributed)
    if encoder is not None:
        check_own_encoder(cls, encoder, config, data)
    else:  # the memory the built-in encoder needs at the least, before it is built
        check_config_fits(config, data, device)
    cls.check_compatible(options, config, data, encoder)
    check_matmul_dtype(config, device, distributed)
    fan_outs = None
    if config.batch_size is not None:
        fan_outs = sampled_hops(config, encoder)
    return RunPlan(cls, options, config, fan_outs)


def check_schedule(
    config: NodeConfig | None,
    *,
    auto: bool = False,
    select_epoch: bool = False,
    resume: bool = False,
    checkpoint_every: int = 0,
    folder: bool = True,
    world: int | None = None,
) -> None:
    """What resuming a run, writing its checkpoints and choosing its epoch go with: a
    checkpoint needs the folder to write it to (``folder``), and is a state of one
    process's run of a named method (method ``"auto"`` and ``select_epoch`` choose again,
    and hand back an earlier checkpoint than the run's state); ``patience`` stops a run of
    one process on its loss, neither resumed, written along the way nor chosen among its
    checkpoints. ``world``: the processes (default: the process group's)."""
    world = rank_and_world()[1] if world is None else world
    saving = resume or bool(checkpoint_every)
    if saving and (auto or select_epoch):
        raise ValueError(
            "resume and checkpoint_every: method 'auto' chooses again (so does select_epoch, "
            "and hands back an earlier checkpoint than the run's state); train the chosen "
            "method with its configuration (result.choice)"
        )
    if saving and not folder:
        what = "resume" if resume else "checkpoint_every"
        raise ValueError(f"{what}: needs the run's folder (checkpoint=, or --save DIR)")
    if saving and world > 1:
        raise ValueError("resume and checkpoint_every: a run of one process only (not torchrun)")
    patience = None if config is None else config.patience
    if patience is not None and select_epoch:
        raise ValueError(
            f"select_epoch: NodeConfig.patience={patience} stops the run on its loss, "
            "before the checkpoints select_epoch would choose among: use one of them"
        )
    if patience is not None and (world > 1 or saving):
        raise ValueError(
            "patience: a run of one process, not resumed and without checkpoint_every (the "
            "lowest-loss weights it keeps are not saved)"
        )


def check_minibatch_fields(config: NodeConfig, world: int | None = None) -> None:
    """A full-batch run sets nothing of mini-batches (``num_neighbors``, ``distributed``
    other than its default), and a process group of ``world`` ranks (default: this one's)
    trains on mini-batches."""
    if config.batch_size is not None:
        return
    if config.num_neighbors is not None or config.distributed != DEFAULT_MODE:
        name = "num_neighbors" if config.num_neighbors is not None else "distributed"
        raise ValueError(
            f"NodeConfig.{name}={getattr(config, name)!r}: mini-batch training's; set "
            "batch_size (--batch-size) or leave it unset"
        )
    if (rank_and_world()[1] if world is None else world) > 1:
        raise ValueError(
            "batch_size: under torchrun the nodes train in mini-batches (--batch-size)"
        )


def check_method_graph(cls: type[NodeMethod], data: Data) -> None:
    """What a method that takes the input graph's edges as positives (``reads_graph``) needs
    of the graph: edges, without weights."""
    if not cls.reads_graph:
        return
    if data.get("edge_weight") is not None:
        raise ValueError(
            f"data.edge_weight: method {cls.name!r} takes the input graph's edges as "
            "positives, which carry no weights"
        )
    if data.num_edges == 0:
        methods = ", ".join(repr(n) for n, c in REGISTRY.items() if not c.reads_graph)
        raise ValueError(
            f"data.edge_index: method {cls.name!r} takes the input graph's edges as positives, "
            "and the graph has none (every loss term would be empty): give it edges (e.g. a "
            "kNN graph of the features, cl2gnn.graphs.knn_graph(data.x, k=10)) or train a "
            f"method that needs none ({methods})"
        )


def check_batching(
    cls: type[NodeMethod],
    config: NodeConfig,
    data: Data,
    options: MethodOptions,
    distributed: str | None,
) -> None:
    """Mini-batches and a process group only for the methods that take them: no weighted
    graph in mini-batches, no sampled keys across ranks."""
    label = cls.name if cls.name != "callable" else "a callable objective"
    check_minibatch_fields(config)
    if config.batch_size is not None:
        if not cls.minibatch:
            takes = tuple(n for n, c in REGISTRY.items() if c.minibatch)
            raise ValueError(
                f"method {label!r} keeps a state per node or uses the whole graph's edges as "
                f"positives: mini-batch training takes the methods {takes}"
            )
        if data.get("edge_weight") is not None:
            raise ValueError("data.edge_weight: mini-batch training samples no edge weights")
    if distributed is None:
        return
    if not cls.spans_ranks:
        takes = tuple(n for n, c in REGISTRY.items() if c.spans_ranks)
        raise ValueError(
            f"method {label!r} does not span the ranks of a process group (its loss needs "
            f"state or pairs a rank does not hold): under torchrun use one of {takes}"
        )
    if getattr(options, "num_keys", None) is not None:
        raise ValueError("distributed takes no num_keys: the negatives are every rank's")


def check_own_encoder(
    cls: type[NodeMethod], encoder: torch.nn.Module, config: NodeConfig, data: Data
) -> None:
    """Beside an encoder of one's own: the built-in encoder's fields (:data:`BUILTIN_ONLY`)
    at their defaults (they would be ignored), and weighted edges (the graph's, or a method's
    weighted views: ``weighted_views``) only for an encoder whose output reads them
    (:func:`~cl2gnn.node.encoders.user.uses_edge_weight`: by what it does, not its
    signature)."""
    check_encoder(encoder)
    defaults = NodeConfig()
    changed = [
        f"{field}={getattr(config, field)!r}"
        for field in BUILTIN_ONLY
        if getattr(config, field) != getattr(defaults, field)
    ]
    if changed:
        raise ValueError(
            f"NodeConfig.{', '.join(changed)}: fields of the built-in encoder, which encoder= "
            "replaces (yours would ignore them): leave them at their defaults, as "
            "default_config(data, method, encoder=encoder) makes them"
        )
    weighted = data.get("edge_weight") is not None
    if not (weighted or cls.weighted_views):
        return
    if uses_edge_weight(encoder, data.num_features, data.x.dtype):
        return
    ignores = (
        "the encoder ignores edge_weight (its output on a graph of two nodes is the same for "
        f"the weights {PROBE_WEIGHTS[0]:g} and {PROBE_WEIGHTS[1]:g})"
    )
    if weighted:
        raise ValueError(
            f"data.edge_weight: {ignores}, so the graph would train on unweighted messages: "
            "remove the weights (data.edge_weight = None) or use an encoder that reads them "
            "(PyG's GCN does; its GraphSAGE and GAT do not)"
        )
    raise ValueError(
        f"encoder: method {cls.name!r} trains on {cls.weighted_views}, and {ignores}: use an "
        "encoder that reads them (PyG's GCN does; its GraphSAGE and GAT do not)"
    )


def check_matmul_dtype(
    config: NodeConfig, device: str | torch.device, distributed: str | None
) -> None:
    """The exact loss's ``matmul_dtype`` where it applies: its tiles on the CPU, in one
    process (a method without the option refuses it, :func:`check_method_takes`)."""
    dtype = config.options.get("matmul_dtype")
    if dtype is None:
        return
    where = f"matmul_dtype={dtype!r}: "
    if torch.device(device).type != "cpu":
        raise ValueError(f"{where}the CPU tiles' products; on {device} leave it None")
    if distributed is not None:
        raise ValueError(f"{where}a run of one process (the negatives across ranks are exact)")


def sampled_hops(config: NodeConfig, encoder: torch.nn.Module | None) -> tuple[int, ...]:
    """The in-neighbors sampled per node at each hop: one fan-out per layer of the encoder
    where it declares its depth (``num_layers``, as PyG's ``BasicGNN`` does; the built-in
    one: ``config.layers``), else ``config.num_neighbors`` as given; ``ValueError`` where
    they disagree or cannot be known."""
    if encoder is None:
        return config.fan_outs()
    depth = getattr(encoder, "num_layers", None)
    if isinstance(depth, int) and not isinstance(depth, bool) and depth >= 1:
        return config.fan_outs(depth)
    if config.num_neighbors is None:
        raise ValueError(
            "NodeConfig.num_neighbors: the encoder declares no depth (num_layers), so the hops "
            "to sample are unknown: give one fan-out per layer it has, e.g. num_neighbors=(10, 10)"
        )
    return config.num_neighbors
