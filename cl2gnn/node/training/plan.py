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
from dataclasses import dataclass

import torch
from torch_geometric.data import Data

from ..config import NodeConfig
from ..encoders.graph_encoder import ENCODER_ARGUMENTS
from ..encoders.own import check_encoder, takes_edge_weight
from ..encoders.spec import check_config_fits
from ..inputs import check_feature_scale, check_graph
from ..methods import REGISTRY, NodeMethod, check_method_takes, check_options, method_type
from ..methods.options import MethodOptions

# the fields something else reads too: GraphACL's neighbors include the node itself
# (self_loops), and the row normalisation is a data transform before an encoder of one's own
# (cl2gnn.node.encoders.own.feature_transform)
READ_BEYOND_THE_ENCODER = ("self_loops", "normalize_features")
# the fields only the built-in encoder reads: an encoder of one's own would ignore them
BUILTIN_ONLY = tuple(
    field for field in ENCODER_ARGUMENTS.values() if field not in READ_BEYOND_THE_ENCODER
)


@dataclass(frozen=True)
class RunPlan:
    """What a checked run trains: the method's class and options, and the sampler's
    fan-outs (mini-batches; ``None``: full batch)."""

    method: type[NodeMethod]
    options: MethodOptions
    fan_outs: tuple[int, ...] | None


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
    check_options(config.options)
    check_method_takes(cls, config.options)
    options = cls.Options.of(config.options, cls.name)
    check_method_graph(cls, data)
    check_batching(cls, config, data, options, distributed)
    if encoder is not None:
        check_own_encoder(encoder, config, data)
    else:  # the memory the built-in encoder needs at the least, before it is built
        check_config_fits(config, data, device)
    check_matmul_dtype(config, device, distributed)
    fan_outs = None
    if config.batch_size is not None:
        fan_outs = sampled_hops(config, encoder)
    return RunPlan(cls, options, fan_outs)


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


def check_own_encoder(encoder: torch.nn.Module, config: NodeConfig, data: Data) -> None:
    """Beside an encoder of one's own: the built-in encoder's fields (:data:`BUILTIN_ONLY`)
    at their defaults (they would be ignored), and the graph's weights only where the
    encoder's forward takes them."""
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
    if data.get("edge_weight") is not None and not takes_edge_weight(encoder):
        raise ValueError(
            "data.edge_weight: the encoder's forward takes no edge_weight argument; "
            "remove the weights or accept edge_weight="
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
