"""The built-in encoder, GRACE's (graph convolutions, all but the last twice the output
width), of any depth, with GAT and GraphSAGE options and three read-outs for the probe (the
methods' heads are theirs: :mod:`cl2gnn.node.methods.heads`)."""

from __future__ import annotations

import itertools
import warnings

import torch
from torch import Tensor
from torch.nn import Identity
from torch_geometric.data import Data
from torch_geometric.nn import GATConv, GCNConv, SAGEConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.transforms import NormalizeFeatures
from torch_geometric.utils import degree as degree_of
from torch_geometric.utils import to_torch_csr_tensor

from ..._checks import one_of
from ..config import ACTIVATIONS, EMBEDDINGS, ENCODERS, NodeConfig
from ..inputs import check_edge_index, check_edge_weight
from .activations import ACTIVATION_MODULES
from .features import ColumnMasked, SparseFeatures, prepare_features
from .layerwise import LayerwiseMaps
from .propagation import as_matrix, propagate

# GraphEncoder's arguments, each from a configuration field: what the built-in encoder reads
ENCODER_ARGUMENTS = {
    "out_channels": "out_channels",
    "activation": "activation",
    "conv": "encoder",
    "layers": "layers",
    "hidden_channels": "hidden_channels",
    "out_activation": "out_activation",
    "batch_norm": "batch_norm",
    "batch_norm_momentum": "batch_norm_momentum",
    "self_loops": "self_loops",
    "readout": "embedding",
    "normalize_features": "normalize_features",
}


class GraphEncoder(LayerwiseMaps, torch.nn.Module):
    r"""GRACE's encoder, of any depth: ``layers`` graph convolutions, each followed by
    (optional) batch norm and the activation,

    .. math::
        h^{(l)} = \sigma\big(\mathrm{norm}(\mathrm{conv}_l(h^{(l-1)}, A))\big),
        \qquad h^{(0)} = x,

    the last one ``out_channels`` wide and the others ``hidden_channels`` (GRACE's
    ``2 · out_channels`` by default; PyG's names). ``conv="sage"`` is GraphSAGE's
    convolution, ``W_self h_i + W_nbr mean_j h_j``: each node's own features keep their own
    weights beside the neighbors' mean (the ego/neighbor separation of heterophily-aware
    GNNs), where GCN averages them together.

    Called as any PyG model, ``encoder(x, edge_index, edge_weight=None)``, it returns the
    embedding the probe reads (``readout``), on any graph with the same feature width: the
    input normalisation and the graph's normalisation are its own business. Training
    calls :meth:`encode` (the last layer) on views it prepared once per step
    (:meth:`prepare`, :meth:`propagation_graph`).

    Args:
        in_channels (int): input features.
        out_channels (int): the last layer's width (with ``readout="last"``, the output's;
            the other read-outs are wider: the attribute :attr:`out_channels`).
        activation (str, optional): ``"relu"``, ``"prelu"``, ``"rrelu"`` (GCA's: the fixed
            mean slope, :class:`MeanRReLU`), ``"elu"`` or ``"none"`` (a linear encoder)
            (default: ``"relu"``).
        conv (str, optional): ``"gcn"``, ``"sage"`` or ``"gat"`` (default: ``"gcn"``).
        heads (int, optional): GAT's heads in every layer but the last (default: ``4``).
        layers (int, optional): graph convolutions (default: ``2``).
        hidden_channels (int, optional): the other layers' width
            (default: ``2 · out_channels``).
        out_activation (bool, optional): the activation after the last layer too
            (default: ``True``).
        batch_norm (bool, optional): batch normalisation before each activation, none
            after a last layer without one (BGRL's encoder; Graph Barlow Twins') (default:
            ``False``).
        batch_norm_momentum (float, optional): torch's ``momentum`` of the batch norms, the
            weight of a batch's statistics in the running ones (BGRL's code: 0.99, Graph
            Barlow Twins': 0.01) (default: ``0.1``).
        self_loops (bool, optional): GCN's added self-loops, ``Â = D^-½(A+I)D^-½``;
            ``False`` normalises the graph as it is (default: ``True``).
        readout (str, optional): what :meth:`forward` returns: ``"last"`` the last layer,
            ``"concat"`` every layer side by side (jumping-knowledge concatenation),
            ``"layers"`` every layer with the input, each row unit-normalised
            (default: ``"last"``).
        normalize_features (bool, optional): row-normalise the input first (PyG's
            ``NormalizeFeatures``) (default: ``False``).

    Shapes:
        - **input:** node features :math:`(N, F_{in})`, edge indices :math:`(2, E)`,
          edge weights :math:`(E)` *(optional; GCN and GraphSAGE)*
        - **output:** :math:`(N, \text{out})`, ``out`` from :attr:`out_channels`
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        activation: str = "relu",
        conv: str = "gcn",
        heads: int = 4,
        *,
        layers: int = 2,
        hidden_channels: int | None = None,
        out_activation: bool = True,
        batch_norm: bool = False,
        batch_norm_momentum: float = 0.1,
        self_loops: bool = True,
        readout: str = "last",
        normalize_features: bool = False,
    ) -> None:
        super().__init__()
        activation = one_of(*ACTIVATIONS)(activation, "activation")
        conv = one_of(*ENCODERS)(conv, "encoder")
        check_readout(readout)
        for name, value in (
            ("in_channels", in_channels),
            ("out_channels", out_channels),
            ("layers", layers),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        first = 2 * out_channels if hidden_channels is None else hidden_channels
        if conv == "gat" and layers > 1 and first % heads:
            raise ValueError(f"the first layer's width {first} must divide by {heads} heads")
        self.kind, self.self_loops, self.readout = conv, self_loops, readout
        self.normalize_features = normalize_features
        self._spec = dict(
            in_channels=in_channels,
            out_channels=out_channels,
            activation=activation,
            conv=conv,
            heads=heads,
            layers=layers,
            hidden_channels=hidden_channels,
            out_activation=out_activation,
            batch_norm=batch_norm,
            batch_norm_momentum=batch_norm_momentum,
            self_loops=self_loops,
            readout=readout,
            normalize_features=normalize_features,
        )
        widths = [in_channels] + [first] * (layers - 1) + [out_channels]
        self.widths = widths
        self.convs = torch.nn.ModuleList()
        for index, (a, b) in enumerate(itertools.pairwise(widths)):
            last = index == layers - 1
            if conv == "gcn":  # normalised once per view by propagation_graph, then SpMM
                self.convs.append(GCNConv(a, b, normalize=False))
            elif conv == "sage":  # "sum" over the row-normalised adjacency: the mean
                self.convs.append(SAGEConv(a, b, aggr="sum"))
            else:
                self.convs.append(GATConv(a, b, heads=1) if last else GATConv(a, b // heads, heads))
        activated = [index < layers - 1 or out_activation for index in range(layers)]
        self.acts = torch.nn.ModuleList(
            ACTIVATION_MODULES[activation]() if on else Identity() for on in activated
        )
        self.norms = torch.nn.ModuleList(
            torch.nn.BatchNorm1d(width, momentum=batch_norm_momentum)
            if batch_norm and on
            else Identity()
            for width, on in zip(widths[1:], activated, strict=True)
        )

    @classmethod
    def from_config(cls, in_channels: int, config: NodeConfig) -> GraphEncoder:
        """The built-in encoder a configuration describes (:data:`ENCODER_ARGUMENTS`)."""
        arguments = {name: getattr(config, field) for name, field in ENCODER_ARGUMENTS.items()}
        return cls(in_channels, **arguments)

    @property
    def spec(self) -> dict:
        """The constructor's arguments (plain values): what rebuilds this encoder."""
        return dict(self._spec)

    @property
    def num_layers(self) -> int:
        return len(self.convs)

    @property
    def out_channels(self) -> int:
        """The width of :meth:`forward`'s output (the read-out)."""
        if self.readout == "last":
            return self.widths[-1]
        layers = sum(self.widths[1:])
        return layers + (self.widths[0] if self.readout == "layers" else 0)

    def reset_parameters(self) -> None:
        for module in (*self.convs, *self.norms, *self.acts):
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.widths[0]}, {self.widths[-1]}, conv={self.kind!r}, "
            f"layers={self.num_layers}, readout={self.readout!r})"
        )

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """The embedding (:attr:`readout`) of every node of the graph ``edge_index``, as
        PyG's models are called; ``ValueError`` for an edge out of range or weights that do
        not fit the edges (the input ``Data``'s checks: none reaches the CSR build or the
        SpMM, where it would corrupt memory)."""
        check_edge_index(edge_index, x.size(0))
        check_edge_weight(edge_weight, edge_index, x.dtype)
        prepared = self.prepare(x)
        graph = self.propagation_graph(edge_index, x.size(0), edge_weight=edge_weight)
        return self.embed(prepared, graph)

    def normalize(self, x: Tensor) -> Tensor:
        """The input as the first layer reads it (row-normalised with
        ``normalize_features``)."""
        return NormalizeFeatures()(Data(x=x)).x if self.normalize_features else x

    def prepare(self, x: Tensor) -> Tensor | SparseFeatures:
        """:meth:`normalize`, then sparse bag-of-words kept sparse (:func:`prepare_features`):
        what :meth:`encode` and :meth:`embed` read, made once for many views."""
        return prepare_features(self.normalize(x))

    def propagation_graph(
        self,
        edge_index: Tensor,
        num_nodes: int,
        degree: Tensor | None = None,
        edge_weight: Tensor | None = None,
    ) -> Tensor:
        """What the convolutions consume, as a CSR ``adj_t`` (one SpMM per layer): for GCN
        the normalised ``Â = D^-½(A+I)D^-½``, for GraphSAGE the row-normalised ``D^-1 A``
        (a node without neighbors aggregates zeros), both weighted by ``edge_weight`` if
        given; for GAT the ``edge_index`` itself (it takes no weights).

        ``degree`` (``[num_nodes]``, from :meth:`degree` on the whole graph): for a subgraph
        that holds all in-edges of the nodes whose outputs are kept (layer-wise inference),
        the whole graph's normalisation, so that those rows equal the full-graph ones."""
        if self.kind == "gat":
            if edge_weight is not None:
                raise ValueError("edge_weight: the GAT encoder takes no edge weights")
            return edge_index
        if edge_weight is not None and degree is not None:
            raise ValueError("edge_weight: a sampled graph's normalisation takes no weights")
        if degree is None:
            if self.kind == "gcn":
                edge_index, weight = gcn_norm(
                    edge_index, edge_weight, num_nodes, add_self_loops=self.self_loops
                )
            elif edge_weight is None:
                weight = 1.0 / degree_of(edge_index[1], num_nodes)[edge_index[1]]
            else:  # the weighted mean of the in-neighbors; none of weight: no neighbor
                total = torch.zeros(num_nodes, dtype=edge_weight.dtype, device=edge_weight.device)
                total = total.index_add(0, edge_index[1], edge_weight)
                # a node whose in-weights are all 0 aggregates zeros, as one without edges
                # (0 / 0 would make its row, and its neighbors' next layer, NaN)
                weight = edge_weight / total.masked_fill(total == 0, 1.0)[edge_index[1]]
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

    def propagation_rows(
        self, ptr: Tensor, source: Tensor, first: int, degree: Tensor | None
    ) -> tuple[Tensor, Tensor | None]:
        """The entries of :meth:`propagation_graph`'s rows ``first … first + rows - 1`` on
        the whole graph, from those nodes' in-edges in CSC form (``ptr`` ``[rows + 1]``
        from 0, ``source`` their global ids) and the whole graph's ``degree``: the edges'
        weights, and GCN's self-loop weights ``[rows]`` apart (``None`` without), its
        existing self-loops weighing ``0`` (``gcn_norm`` replaces them). GAT: ``0`` on a
        self-loop and ``1`` on any other edge (its attention replaces them too)."""
        rows = ptr.numel() - 1
        target = first + torch.repeat_interleave(torch.arange(rows), ptr.diff())
        dtype = torch.get_default_dtype()
        if self.kind == "gat":
            return (source != target).to(dtype), None
        if self.kind == "sage":
            return 1.0 / degree.to(dtype)[target], None
        scale = degree.to(dtype).rsqrt()
        scale = scale.masked_fill(scale.isinf(), 0.0)
        weight = scale[source] * scale[target]
        if not self.self_loops:
            return weight, None
        return weight.masked_fill(source == target, 0.0), scale[first : first + rows].square()

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

    def _first_conv(self, x: Tensor | SparseFeatures | ColumnMasked, graph) -> Tensor:
        conv = self.convs[0]
        if isinstance(x, Tensor):
            return self._conv(0, x, graph)
        if self.kind == "gat":
            return conv(x.to_dense(), graph)
        rows = graph.size(0)
        if isinstance(x, ColumnMasked):  # the convolutions' own steps, the mask on W
            return self._column_masked_conv(x, graph, rows)
        if self.kind == "sage":  # W_nbr (Ā X) + b + W_self X with the fixed sparse X
            neighbors = propagate(graph, x.matmul(conv.lin_l.weight.T)) + conv.lin_l.bias
            return neighbors + x.matmul(conv.lin_r.weight.T)[:rows]
        # GCNConv's Â (X W) + b with the fixed sparse X (its column mask moved to W)
        return propagate(graph, x.matmul(conv.lin.weight.T)) + conv.bias

    def _column_masked_conv(self, x: ColumnMasked, graph, rows: int) -> Tensor:
        """The first convolution on ``X diag(m)``, step by step as PyG's ``SAGEConv``
        (aggregate, then ``lin_l``, plus ``lin_r`` of the targets) and ``GCNConv`` (``lin``,
        propagate, bias) compute it, each weight's columns masked instead of ``X``'s."""
        linear = torch.nn.functional.linear
        conv = self.convs[0]
        if self.kind == "sage":
            neighbors = linear(propagate(graph, x.x), x.masked(conv.lin_l.weight), conv.lin_l.bias)
            return neighbors + linear(x.x[:rows], x.masked(conv.lin_r.weight))
        return propagate(graph, linear(x.x, x.masked(conv.lin.weight))) + conv.bias

    def _conv(self, index: int, x: Tensor, graph) -> Tensor:
        """Convolution ``index`` on dense ``x``: the PyG module on a CSR graph or an edge
        list, its own steps on a :class:`~cl2gnn.node.encoders.propagation.ValuedGraph`."""
        conv = self.convs[index]
        if not as_matrix(graph):
            return conv(self._pair(x, graph), graph)
        if self.kind == "sage":  # SAGEConv: lin_l of the neighbors' mean, plus lin_r of its own
            return conv.lin_l(graph.matmul(x)) + conv.lin_r(x[: graph.size(0)])
        return graph.matmul(conv.lin(x)) + conv.bias  # GCNConv: Â (X W) + b

    def _pair(self, x: Tensor, graph: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        """GraphSAGE's input as (sources, targets): a trimmed graph (:func:`first_rows`) keeps
        the first rows only, and its own term needs those rows alone."""
        if self.kind != "sage":
            return x
        return x, x[: graph.size(0)]

    def layer(self, index: int, x: Tensor | SparseFeatures, graph: Tensor) -> Tensor:
        """Layer ``index`` with its normalisation and activation, on ``graph`` (from
        :meth:`propagation_graph`, or its :func:`first_rows`)."""
        out = self._first_conv(x, graph) if index == 0 else self._conv(index, x, graph)
        return self.acts[index](self.norms[index](out))

    def _layers(self, x, graph) -> list[Tensor]:
        graphs = graph if isinstance(graph, tuple | list) else [graph] * self.num_layers
        if len(graphs) != self.num_layers:
            raise ValueError(f"graph: one per layer ({self.num_layers}), got {len(graphs)}")
        outputs, h = [], x
        for index, layer_graph in enumerate(graphs):
            h = self.layer(index, h, layer_graph)
            outputs.append(h)
        return outputs

    def encode(self, x: Tensor | SparseFeatures | ColumnMasked, graph) -> Tensor:
        """The last layer's output, what training's losses read: ``x`` from :meth:`prepare`
        (or a view of it), ``graph`` from :meth:`propagation_graph` (or a dense ``[N, N]``
        matrix, propagated on as it is: MVGRL's exact diffusion), or one graph per layer,
        each trimmed to the rows the next one reads (:func:`first_rows`; the output then
        holds the last graph's rows)."""
        return self._layers(x, graph)[-1]

    def embed(self, x: Tensor | SparseFeatures, graph) -> Tensor:
        """:attr:`readout` of the layers' outputs on ``x`` (from :meth:`prepare`) and
        ``graph`` (as :meth:`encode` takes it)."""
        return read_out(x, self._layers(x, graph), self.readout)


def check_readout(readout: str) -> None:
    if readout not in EMBEDDINGS:
        raise ValueError(f"readout must be one of {EMBEDDINGS}, got {readout!r}")


def read_out(x: Tensor | SparseFeatures, layers: list[Tensor], readout: str) -> Tensor:
    """The embedding :meth:`GraphEncoder.embed` returns for ``readout``, from the input and
    every layer's output."""
    if readout == "last":
        return layers[-1]
    if readout == "concat":
        return torch.cat(layers, dim=-1)
    x = x if isinstance(x, Tensor) else x.to_dense()
    return torch.cat([torch.nn.functional.normalize(h, dim=-1) for h in (x, *layers)], -1)
