"""An encoder of one's own, as the library takes it: any ``torch.nn.Module`` called as
``encoder(x, edge_index[, edge_weight=])`` returning ``[N, d]``: its checks, the width it
outputs, what a run applies to the graph before it reads it, and whether it embeds a large
graph by its own ``inference``."""

from __future__ import annotations

import inspect

import torch
from torch import Tensor
from torch_geometric.transforms import BaseTransform, NormalizeFeatures

from ..config import NodeConfig
from .graph_encoder import GraphEncoder


def takes_edge_weight(encoder: torch.nn.Module) -> bool:
    """Whether ``encoder``'s forward accepts ``edge_weight=`` (by name, or ``**kwargs``)."""
    try:
        parameters = inspect.signature(encoder.forward).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "edge_weight" or p.kind is p.VAR_KEYWORD for p in parameters)


def check_encoder(encoder: object) -> None:
    if not isinstance(encoder, torch.nn.Module):
        raise ValueError(
            f"encoder must be a torch.nn.Module called as encoder(x, edge_index), got "
            f"{type(encoder).__name__}"
        )


def checked_output(out: object, x: Tensor) -> Tensor:
    """``out``, an encoder's output on the graph whose features are ``x``, if it is
    ``[N, d]`` for the ``N`` rows of ``x``, of ``x``'s dtype (the heads' and the losses'),
    with data (not on the ``meta`` device); ``ValueError`` otherwise. A check of shape, type
    and device (no host sync): every call of an encoder in training and in the final
    embedding goes through it."""
    num_nodes, dtype = x.size(0), getattr(x, "dtype", torch.get_default_dtype())
    if not isinstance(out, Tensor) or out.dim() != 2 or out.size(0) != num_nodes:
        shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(
            f"encoder(x, edge_index) must return one row per node, [N, d]; on {num_nodes} "
            f"nodes it returned {shape}"
        )
    if out.dtype != dtype or out.is_meta:
        raise ValueError(
            f"encoder(x, edge_index) must return values of x's dtype, {dtype} (the heads' "
            f"and the losses'), got {out.dtype}"
            + (" on the meta device (no values)" if out.is_meta else "")
        )
    return out


@torch.no_grad()
def output_width(encoder: torch.nn.Module, x: Tensor, edge_index: Tensor) -> int:
    """The width ``d`` of ``encoder(x, edge_index)``, read from its output on the first few
    nodes and the edges among them (in eval mode, its training mode restored); ``ValueError``
    unless it is ``[rows, d]`` (:func:`checked_output`, which training applies to every
    call on all the rows)."""
    rows = min(x.size(0), 8)
    keep = (edge_index[0] < rows) & (edge_index[1] < rows)
    was_training = encoder.training
    encoder.eval()
    try:
        out = encoder(x[:rows], edge_index[:, keep])
    finally:
        encoder.train(was_training)
    return checked_output(out, x[:rows]).size(1)


def feature_transform(config: NodeConfig, encoder: torch.nn.Module) -> BaseTransform | None:
    """What a run applies to a graph before ``encoder`` reads it: the configuration's row
    normalisation (PyG's ``NormalizeFeatures``, ``normalize_features``) where the encoder does
    not normalise itself (an encoder of one's own); ``None`` for the built-in encoder, which
    normalises inside and is called on ``data.x`` as it is."""
    normalises = isinstance(encoder, GraphEncoder) and encoder.normalize_features
    return NormalizeFeatures() if config.normalize_features and not normalises else None


def has_inference(encoder: torch.nn.Module) -> bool:
    """Whether ``encoder`` embeds a large graph by its own ``inference(loader, device)``
    (PyG's ``BasicGNN``: layer by layer over full one-hop neighborhoods, where its read-out
    is the last layer's)."""
    reads_last = getattr(encoder, "jk_mode", None) in (None, "last")  # PyG's jk="cat": none
    return callable(getattr(encoder, "inference", None)) and reads_last
