"""GRACE's encoder (two graph convolutions, the first to twice the hidden width) and its
projection head, with GAT and GraphSAGE options and three read-outs for the probe."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor
from torch_geometric.nn import GATConv, GCNConv, SAGEConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import degree as degree_of
from torch_geometric.utils import spmm, to_torch_csr_tensor

from .features import SparseFeatures
from .names import EMBEDDINGS, ENCODERS

ACTIVATIONS = {
    "relu": torch.nn.ReLU,
    "prelu": torch.nn.PReLU,
    "rrelu": torch.nn.RReLU,
    "elu": torch.nn.ELU,
    "none": torch.nn.Identity,
}


class GraphEncoder(torch.nn.Module):
    """``act(norm(conv2(act(norm(conv1(x))))))``, ``conv1: in -> first_hidden`` (GRACE's
    ``2 · hidden`` by default), ``conv2: -> hidden``.

    ``conv="sage"`` is GraphSAGE's convolution, ``W_self h_i + W_nbr mean_{j∈N(i)} h_j``:
    each node's own features keep their own weights beside the neighbours' mean (the
    ego/neighbour separation of heterophily-aware GNNs), where GCN averages them together.

    Args:
        in_dim (int): input features.
        hidden (int): output width.
        activation (str, optional): ``"relu"``, ``"prelu"``, ``"rrelu"``, ``"elu"`` or
            ``"none"`` (a linear encoder) (default: ``"relu"``).
        conv (str, optional): ``"gcn"``, ``"sage"`` or ``"gat"`` (default: ``"gcn"``).
        heads (int, optional): GAT's heads in the first layer (default: ``4``).
        first_hidden (int, optional): the first layer's width (default: ``2 · hidden``).
        out_activation (bool, optional): the activation after the last layer too
            (default: ``True``).
        batch_norm (bool, optional): batch normalisation before each activation (BGRL's
            encoder) (default: ``False``).
        self_loops (bool, optional): GCN's added self-loops, ``Â = D^-½(A+I)D^-½``;
            ``False`` normalises the graph as it is (default: ``True``).
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        activation: str = "relu",
        conv: str = "gcn",
        heads: int = 4,
        *,
        first_hidden: int | None = None,
        out_activation: bool = True,
        batch_norm: bool = False,
        self_loops: bool = True,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        if conv not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {conv!r}")
        self.kind, self.self_loops = conv, self_loops
        first = 2 * hidden if first_hidden is None else first_hidden
        if conv == "gcn":  # normalised once per view by propagation_graph, then SpMM
            self.conv1 = GCNConv(in_dim, first, normalize=False)
            self.conv2 = GCNConv(first, hidden, normalize=False)
        elif conv == "sage":  # "sum" over the row-normalised adjacency: the neighbours' mean
            self.conv1 = SAGEConv(in_dim, first, aggr="sum")
            self.conv2 = SAGEConv(first, hidden, aggr="sum")
        else:
            if first % heads:
                raise ValueError(f"the first layer's width {first} must divide by {heads} heads")
            self.conv1 = GATConv(in_dim, first // heads, heads=heads)
            self.conv2 = GATConv(first, hidden, heads=1)
        self.act1 = ACTIVATIONS[activation]()
        self.act2 = ACTIVATIONS[activation]() if out_activation else torch.nn.Identity()
        norm = torch.nn.BatchNorm1d if batch_norm else lambda _: torch.nn.Identity()
        self.norm1, self.norm2 = norm(first), norm(hidden)

    def reset_parameters(self) -> None:
        for module in (self.conv1, self.conv2, self.norm1, self.norm2, self.act1, self.act2):
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()

    def propagation_graph(
        self, edge_index: Tensor, num_nodes: int, degree: Tensor | None = None
    ) -> Tensor:
        """What the convolutions consume, as a CSR ``adj_t`` (one SpMM per layer): for GCN
        the normalised ``Â = D^-½(A+I)D^-½``, for GraphSAGE the row-normalised ``D^-1 A``
        (a node without neighbours aggregates zeros); for GAT the ``edge_index`` itself.

        ``degree`` (``[num_nodes]``, from :meth:`degree` on the whole graph): for a subgraph
        that holds all in-edges of the nodes whose outputs are kept (layer-wise inference),
        the whole graph's normalisation, so that those rows equal the full-graph ones."""
        if self.kind == "gat":
            return edge_index
        if degree is None:
            if self.kind == "gcn":
                edge_index, weight = gcn_norm(
                    edge_index, None, num_nodes, add_self_loops=self.self_loops
                )
            else:
                weight = 1.0 / degree_of(edge_index[1], num_nodes)[edge_index[1]]
        elif self.kind == "gcn":
            if self.self_loops:  # gcn_norm's self-loops: one of weight 1 per node
                edge_index = edge_index[:, edge_index[0] != edge_index[1]]
                loops = torch.arange(num_nodes, device=edge_index.device).expand(2, -1)
                edge_index = torch.cat([edge_index, loops], 1)
            scale = degree.to(torch.get_default_dtype()).rsqrt()
            scale = scale.masked_fill(scale.isinf(), 0.0)  # a node without edges sends nothing
            weight = scale[edge_index[0]] * scale[edge_index[1]]
        else:
            weight = 1.0 / degree.to(torch.get_default_dtype())[edge_index[1]]
        with warnings.catch_warnings():  # torch's "sparse CSR is beta" notices
            warnings.simplefilter("ignore", UserWarning)
            return to_torch_csr_tensor(edge_index.flip(0), weight, size=(num_nodes, num_nodes))

    def degree(self, edge_index: Tensor, num_nodes: int) -> Tensor:
        """The degrees :meth:`propagation_graph` normalises by, counted without copying the
        edges: GCN's in-degree with one self-loop per node (``gcn_norm``'s; the plain
        in-degree with ``self_loops=False``), GraphSAGE's plain in-degree; ``None`` for GAT
        (its attention needs none)."""
        if self.kind == "gat":
            return None
        target = edge_index[1]
        degree = torch.bincount(target, minlength=num_nodes)
        if self.kind == "sage" or not self.self_loops:
            return degree
        loops = torch.bincount(target[edge_index[0] == target], minlength=num_nodes)
        return degree - loops + 1

    def _first_conv(self, x: Tensor | SparseFeatures, graph: Tensor) -> Tensor:
        if not isinstance(x, SparseFeatures):
            return self.conv1(x, graph)
        if self.kind == "gat":
            return self.conv1(x.to_dense(), graph)
        if self.kind == "sage":  # W_nbr (Ā X) + b + W_self X with the fixed sparse X
            conv = self.conv1
            neighbours = spmm(graph, x.matmul(conv.lin_l.weight.T)) + conv.lin_l.bias
            return neighbours + x.matmul(conv.lin_r.weight.T)
        # GCNConv's Â (X W) + b with the fixed sparse X (its column mask moved to W)
        return spmm(graph, x.matmul(self.conv1.lin.weight.T)) + self.conv1.bias

    def layer(self, index: int, x: Tensor | SparseFeatures, graph: Tensor) -> Tensor:
        """Layer ``index`` (0 or 1) with its activation, on ``graph`` (from
        :meth:`propagation_graph`): the two steps of :meth:`forward`, for layer-wise
        inference."""
        if index == 0:
            return self.act1(self.norm1(self._first_conv(x, graph)))
        return self.act2(self.norm2(self.conv2(x, graph)))

    def forward(self, x: Tensor | SparseFeatures, graph: Tensor, readout: str = "last") -> Tensor:
        """``graph``: the output of :meth:`propagation_graph`. ``readout`` (an embedding for
        the probe): ``"last"`` the last layer ``[N, hidden]``; ``"concat"`` both layers side
        by side (jumping-knowledge concatenation, ``[N, 3·hidden]``); ``"layers"`` every layer,
        the input features included, each row scaled to unit length so that no layer
        outweighs the others by its scale (``[N, in + 3·hidden]``)."""
        check_readout(readout)
        first = self.layer(0, x, graph)
        return read_out(x, first, self.layer(1, first, graph), readout)


def check_readout(readout: str) -> None:
    if readout not in EMBEDDINGS:
        raise ValueError(f"readout must be one of {EMBEDDINGS}, got {readout!r}")


def read_out(x: Tensor | SparseFeatures, first: Tensor, last: Tensor, readout: str) -> Tensor:
    """The embedding :meth:`GraphEncoder.forward` returns for ``readout``, from the input and
    the two layers' outputs."""
    if readout == "last":
        return last
    if readout == "concat":
        return torch.cat([first, last], dim=-1)
    x = x.to_dense() if isinstance(x, SparseFeatures) else x
    return torch.cat([torch.nn.functional.normalize(h, dim=-1) for h in (x, first, last)], -1)


class ProjectionHead(torch.nn.Module):
    """GRACE's head: ``fc2(elu(fc1(h)))``."""

    def __init__(self, hidden: int, proj_hidden: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, proj_hidden)
        self.fc2 = torch.nn.Linear(proj_hidden, hidden)

    def forward(self, h: Tensor) -> Tensor:
        return self.fc2(torch.nn.functional.elu(self.fc1(h)))
