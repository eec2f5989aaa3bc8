"""GRACE's encoder (two graph convolutions, the first to twice the hidden width) and its
projection head, with a GAT option."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor
from torch_geometric.nn import GATConv, GCNConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import spmm, to_torch_csr_tensor

from .features import SparseFeatures
from .names import ENCODERS

ACTIVATIONS = {
    "relu": torch.nn.ReLU,
    "prelu": torch.nn.PReLU,
    "rrelu": torch.nn.RReLU,
    "elu": torch.nn.ELU,
}


class GraphEncoder(torch.nn.Module):
    """``act(conv2(act(conv1(x))))`` with ``conv1: in -> 2·hidden``, ``conv2: -> hidden``."""

    def __init__(
        self, in_dim: int, hidden: int, activation: str = "relu", conv: str = "gcn", heads: int = 4
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.kind = conv
        if conv == "gcn":  # normalised once per view by propagation_graph, then SpMM
            self.conv1 = GCNConv(in_dim, 2 * hidden, normalize=False)
            self.conv2 = GCNConv(2 * hidden, hidden, normalize=False)
        elif conv == "gat":
            self.conv1 = GATConv(in_dim, 2 * hidden // heads, heads=heads)
            self.conv2 = GATConv(2 * hidden, hidden, heads=1)
        else:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {conv!r}")
        self.act1, self.act2 = ACTIVATIONS[activation](), ACTIVATIONS[activation]()

    def reset_parameters(self) -> None:
        self.conv1.reset_parameters()
        self.conv2.reset_parameters()

    def propagation_graph(self, edge_index: Tensor, num_nodes: int) -> Tensor:
        """What the convolutions consume: for GCN the normalised ``Â = D^-½(A+I)D^-½`` as a
        CSR ``adj_t`` (one SpMM per layer), for GAT the ``edge_index`` itself."""
        if self.kind == "gat":
            return edge_index
        edge_index, weight = gcn_norm(edge_index, None, num_nodes, add_self_loops=True)
        with warnings.catch_warnings():  # torch's "sparse CSR is beta" notices
            warnings.simplefilter("ignore", UserWarning)
            return to_torch_csr_tensor(edge_index.flip(0), weight, size=(num_nodes, num_nodes))

    def _first_conv(self, x: Tensor | SparseFeatures, graph: Tensor) -> Tensor:
        if not isinstance(x, SparseFeatures):
            return self.conv1(x, graph)
        if self.kind == "gat":
            return self.conv1(x.to_dense(), graph)
        # GCNConv's Â (X W) + b with the fixed sparse X (its column mask moved to W)
        return spmm(graph, x.matmul(self.conv1.lin.weight.T)) + self.conv1.bias

    def forward(
        self, x: Tensor | SparseFeatures, graph: Tensor, concat_layers: bool = False
    ) -> Tensor:
        """``graph``: the output of :meth:`propagation_graph`. With ``concat_layers`` the
        output is both layers' outputs side by side (jumping-knowledge concatenation,
        ``[N, 3·hidden]``), an embedding for the probe."""
        first = self.act1(self._first_conv(x, graph))
        last = self.act2(self.conv2(first, graph))
        return torch.cat([first, last], dim=-1) if concat_layers else last


class ProjectionHead(torch.nn.Module):
    """GRACE's head: ``fc2(elu(fc1(h)))``."""

    def __init__(self, hidden: int, proj_hidden: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, proj_hidden)
        self.fc2 = torch.nn.Linear(proj_hidden, hidden)

    def forward(self, h: Tensor) -> Tensor:
        return self.fc2(torch.nn.functional.elu(self.fc1(h)))
