"""An encoder of one's own, as the library takes it: any ``torch.nn.Module`` called as
``encoder(x, edge_index[, edge_weight=])`` returning ``[N, d]``: its checks, the width it
outputs, whether it uses edge weights (by what it does, not by its signature), and what a
run applies to the graph before it reads it (saved with it: :class:`NormalizedInput`)."""

from __future__ import annotations

import inspect

import torch
from torch import Tensor
from torch_geometric.data import Data
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


# the two weights of the probe's edges: an encoder whose output does not move between them
# does not read its edge_weight argument
PROBE_WEIGHTS = (1.0, 0.25)


@torch.no_grad()
def uses_edge_weight(encoder: torch.nn.Module, num_features: int, dtype: torch.dtype) -> bool:
    """Whether ``encoder``'s output depends on ``edge_weight=``, by what it does: on a graph
    of two nodes linked both ways (random features from a generator of its own, in eval
    mode, torch's generators untouched), the outputs for the edges' weights of
    :data:`PROBE_WEIGHTS` differ. A forward that lists ``edge_weight`` and ignores it (PyG's
    ``GraphSAGE`` and ``GAT``) does not; one without the argument does not either."""
    if not takes_edge_weight(encoder):
        return False
    device = next(iter(encoder.parameters()), torch.empty(0)).device
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(2, num_features, generator=generator, dtype=dtype).to(device)
    edges = torch.tensor([[0, 1], [1, 0]], device=device)
    was_training = encoder.training
    encoder.eval()
    try:
        outputs = [
            encoder(x, edges, edge_weight=torch.full((2,), w, dtype=dtype, device=device))
            for w in PROBE_WEIGHTS
        ]
    except Exception as error:  # any failure: the encoder cannot be probed
        raise ValueError(
            f"encoder: could not be run on a graph of two nodes with edge_weight= to see "
            f"whether it uses the weights ({type(error).__name__}: {error})"
        ) from None
    finally:
        encoder.train(was_training)
    return not torch.equal(*outputs)


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


class NormalizedInput(torch.nn.Module):
    r"""``module`` on row-normalised features: PyG's ``NormalizeFeatures`` applied to ``x``
    (shifted to a minimum of 0, each row divided by its sum), then
    ``module(x, edge_index[, edge_weight=])``. What :func:`~cl2gnn.node.load_encoder` hands
    back for a run that normalised the features before an encoder of one's own, so that the
    loaded model, called on the raw features, gives the run's embeddings.

    Args:
        module (torch.nn.Module): the encoder, called as PyG's models are.

    Shapes:
        - **input:** node features :math:`(N, F)`, edge indices :math:`(2, E)`, edge
          weights :math:`(E)` *(optional)*
        - **output:** :math:`(N, d)`
    """

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        x = NormalizeFeatures()(Data(x=x)).x
        if edge_weight is None:
            return self.module(x, edge_index)
        return self.module(x, edge_index, edge_weight=edge_weight)
