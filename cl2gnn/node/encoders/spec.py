"""What a saved built-in encoder may ask for: the checks of the arguments an ``encoder.pt``
rebuilds :class:`~cl2gnn.node.GraphEncoder` (and MVGRL's diffusion, PolyGCL's filters)
from, bounded as the command's flags and a configuration's fields are
(:func:`check_saved_spec`), and the memory a built-in encoder needs at the least, against
the device's (:func:`check_encoder_fits`): a file or flags asking for a terabyte are refused
in one line before anything is built, not met by an allocation failure or a hang."""

from __future__ import annotations

import itertools
import os

import torch
from torch_geometric.data import Data

from ..._checks import COUNT_MAX, Check, integer
from ..config import FIELDS, NodeConfig
from .graph_encoder import ENCODER_ARGUMENTS

# GraphEncoder's own arguments beside those a configuration field sets: the input width
# (a count) and GAT's heads (at most a layer's width, which they divide)
ENCODER_SPEC: dict[str, Check] = {
    "in_channels": integer(1, COUNT_MAX),
    "heads": FIELDS["out_channels"],
    **{argument: FIELDS[field] for argument, field in ENCODER_ARGUMENTS.items()},
}


def check_saved_spec(spec: object, checks: dict[str, Check], what: str) -> dict:
    """``spec`` (a saved module's arguments) with every argument ``checks`` names and no
    other, each within its bounds; ``ValueError`` naming ``what`` and the argument."""
    if not isinstance(spec, dict):
        raise ValueError(f"{what}: must be a mapping of arguments, got {type(spec).__name__}")
    unknown = sorted(map(str, set(spec) - set(checks)))
    missing = sorted(set(checks) - set(spec))
    if unknown or missing:
        raise ValueError(
            f"{what}: "
            + "; ".join(
                part
                for part in (
                    f"unknown argument(s) {', '.join(unknown)}" if unknown else "",
                    f"missing {', '.join(missing)}" if missing else "",
                )
                if part
            )
        )
    return {name: check(spec[name], f"{what}.{name}") for name, check in checks.items()}


def encoder_widths(spec: dict) -> list[int]:
    """The widths of a built-in encoder's layers, input first (GraphEncoder's rule: every
    layer but the last ``hidden_channels`` wide, by default twice ``out_channels``)."""
    hidden = spec.get("hidden_channels") or 2 * spec["out_channels"]
    return [spec["in_channels"], *[hidden] * (spec["layers"] - 1), spec["out_channels"]]


def least_bytes(spec: dict, num_nodes: int | None, training: bool) -> int:
    """What a built-in encoder of ``spec`` needs at the least, in float32: its weights
    (GraphSAGE: two per connection), with their gradients where it trains, and each layer's
    output for ``num_nodes`` nodes (``None``: not counted). A lower bound: a run that needs
    more than it is refused, never one that fits."""
    widths = encoder_widths(spec)
    per_connection = 2 if spec.get("conv") == "sage" else 1
    weights = sum(a * b * per_connection + b for a, b in itertools.pairwise(widths))
    outputs = sum(widths[1:]) * (num_nodes or 0)
    return 4 * (weights * (2 if training else 1) + outputs)


def device_memory(device: str | torch.device) -> int | None:
    """The memory of ``device``: a CUDA device's own, else this machine's; ``None`` for a
    CUDA device this machine lacks (the device check's to refuse, not this one's)."""
    device = torch.device(device)
    if device.type != "cuda":
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if not torch.cuda.is_available() or (device.index or 0) >= torch.cuda.device_count():
        return None
    return torch.cuda.get_device_properties(device).total_memory


def check_encoder_fits(
    spec: dict, num_nodes: int | None, device: str | torch.device, what: str, training: bool
) -> None:
    """``ValueError`` naming ``what`` where a built-in encoder of ``spec`` needs more memory
    than ``device`` has (:func:`least_bytes`), before anything is built."""
    needed, available = least_bytes(spec, num_nodes, training), device_memory(device)
    if available is not None and needed > available:
        widths = encoder_widths(spec)
        cuda = torch.device(device).type == "cuda"
        where = f"of {torch.device(device)}" if cuda else "of this machine's memory"
        raise ValueError(
            f"{what}: a built-in encoder of {len(widths) - 1} layers {widths[1]} wide "
            f"({widths[0]} features in) needs at least {needed / 2**30:,.1f} GiB"
            f"{' to train' if training else ''}, more than the {available / 2**30:,.1f} GiB "
            f"{where}; use fewer layers or narrower ones "
            "(layers, out_channels, hidden_channels)"
        )


def check_saved_encoder(checkpoint: dict) -> dict:
    """An ``encoder.pt``'s mapping (:func:`~cl2gnn.node.result.encoder_checkpoint`) with
    every entry a rebuild reads checked: ``builtin`` a bool, the built-in encoder's
    ``spec`` (:data:`ENCODER_SPEC`) fitting this machine's memory, and ``state_dict`` a
    mapping of names to finite tensors; ``ValueError`` naming the entry otherwise. (The
    arguments of a method's embedding model are its method's to check:
    :attr:`~cl2gnn.node.NodeMethod.embedding_spec_checks`.)"""
    from ..._validation import non_finite_entries

    if not isinstance(checkpoint.get("builtin"), bool):
        raise ValueError(f"builtin: must be true or false, got {checkpoint.get('builtin')!r}")
    checked = dict(checkpoint)
    if checkpoint["builtin"]:
        checked["spec"] = check_saved_spec(checkpoint.get("spec"), ENCODER_SPEC, "spec")
        check_encoder_fits(checked["spec"], None, "cpu", "spec", training=False)
    if not isinstance(checkpoint.get("class"), str):
        raise ValueError("class: must be the encoder class's name")
    weights = checkpoint.get("state_dict")
    if not isinstance(weights, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise ValueError("state_dict: must map the weights' names to tensors")
    non_finite = non_finite_entries(weights)
    if non_finite:
        shown = ", ".join(non_finite[:3]) + (", …" if len(non_finite) > 3 else "")
        raise ValueError(f"state_dict: NaN or inf in {shown}")
    return checked


def check_config_fits(config: NodeConfig, data: Data, device: str | torch.device) -> None:
    """:func:`check_encoder_fits` for training the built-in encoder ``config`` describes
    on ``data`` (its layers' outputs counted for every node where it trains full-batch)."""
    spec = {argument: getattr(config, field) for argument, field in ENCODER_ARGUMENTS.items()}
    spec["in_channels"] = data.num_features
    nodes = data.num_nodes if config.batch_size is None else None
    check_encoder_fits(spec, nodes, device, "NodeConfig", training=True)
