"""Layer-wise inference's view of the built-in encoder: each layer's linear map once for every
node, then the propagation of a batch of target rows from the whole graph's in-edges, so that
every row equals the full-graph forward's
(:func:`~cl2gnn.node.training.inference.layerwise_embeddings` runs it;
:class:`~cl2gnn.node.encoders.graph_encoder.GraphEncoder` takes these methods)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn import GATConv
from torch_geometric.utils import softmax, spmm

from .features import SparseFeatures


class LayerwiseMaps:
    """The methods layer-wise inference calls on :class:`GraphEncoder` (its ``convs``,
    ``norms``, ``acts`` and ``kind``)."""

    def _maps(self, index: int) -> tuple[torch.nn.Module, Tensor, Tensor | None, Tensor | None]:
        """Layer ``index``'s convolution, its weight on the sources' features, its bias and
        (GraphSAGE) its weight on the target's own features."""
        conv = self.convs[index]
        if self.kind == "gcn":
            return conv, conv.lin.weight, conv.bias, None
        if self.kind == "sage":
            return conv, conv.lin_l.weight, conv.lin_l.bias, conv.lin_r.weight
        return conv, conv.lin.weight, conv.bias, None

    def maps_first(self, index: int, sparse: bool) -> bool:
        """Whether layer-wise inference maps every node's features first (``X W`` once, by
        :meth:`shared_map`) and propagates the product, or propagates ``X`` and maps each
        batch's result: the first where the map narrows the features (or they are sparse,
        or GAT, whose attention needs ``X W``), so that the propagation moves fewer columns."""
        weight = self._maps(index)[1]
        return self.kind == "gat" or (index == 0 and sparse) or weight.size(0) < weight.size(1)

    def shared_map(self, index: int, x: Tensor | SparseFeatures) -> Tensor:
        """Layer ``index``'s linear map of the rows ``x`` as sources, which layer-wise
        inference computes once for every node (by batches of rows): ``X W`` (GraphSAGE:
        its neighbor weight), for GAT followed by each head's two attention terms
        (``[rows, heads · out + 2 · heads]``)."""
        _, weight, _, _ = self._maps(index)
        mapped = x.matmul(weight.T)
        if self.kind != "gat":
            return mapped
        conv = self.convs[index]
        heads = mapped.view(-1, conv.heads, conv.out_channels)
        source = (heads * conv.att_src).sum(-1)
        target = (heads * conv.att_dst).sum(-1)
        return torch.cat([mapped, source, target], 1)

    def rows_output(
        self,
        index: int,
        sources: Tensor,
        targets: Tensor | SparseFeatures,
        shared_targets: Tensor | None,
        adj: Tensor,
        loop: Tensor | None,
    ) -> Tensor:
        """Layer ``index``'s output (activation included) for a batch of target nodes, as
        the whole graph's forward computes their rows.

        ``adj``: the targets' rows of the whole graph's propagation graph (CSR
        ``[targets, sources]``; GCN's self-loops as ``loop``, their weights ``[targets]``;
        for GAT the edges only, a self-loop's value ``0`` and any other ``1``). ``sources``:
        the sources' :meth:`shared_map` where :meth:`maps_first`, else their features;
        ``targets``: the targets' features; ``shared_targets``: their :meth:`shared_map`
        (GAT, GCN's self-loops)."""
        conv, weight, bias, own = self._maps(index)
        if self.kind == "gat":
            out = self._attend(conv, sources, shared_targets, adj)
        elif self.maps_first(index, isinstance(targets, SparseFeatures)):
            out = spmm(adj, sources)
            if loop is not None:
                out = out + loop[:, None] * shared_targets
        else:  # propagate the narrower features, then map the batch's rows
            out = spmm(adj, sources)
            if loop is not None:
                out = out + loop[:, None] * targets
            out = out @ weight.T
        if bias is not None:
            out = out + bias
        if own is not None:
            out = out + targets.matmul(own.T)  # a Tensor's or SparseFeatures' product
        return self.acts[index](self.norms[index](out))

    @staticmethod
    def _attend(conv: GATConv, sources: Tensor, targets: Tensor, adj: Tensor) -> Tensor:
        """GATConv's propagation for the rows of ``adj`` from the shared maps: each
        target's softmax over its in-edges (self-loops dropped) and one self-loop."""
        heads, width = conv.heads, conv.heads * conv.out_channels
        ptr, source = adj.crow_indices(), adj.col_indices()
        rows = ptr.numel() - 1
        target = torch.repeat_interleave(torch.arange(rows, device=ptr.device), ptr.diff())
        logits = sources[source, width : width + heads] + targets[target, width + heads :]
        logits = logits.masked_fill(adj.values()[:, None] == 0, float("-inf"))
        loops = targets[:, width : width + heads] + targets[:, width + heads :]
        index = torch.cat([target, torch.arange(rows, device=ptr.device)])
        alpha = torch.nn.functional.leaky_relu(torch.cat([logits, loops]), conv.negative_slope)
        alpha = softmax(alpha, index, num_nodes=rows)
        messages = torch.cat([sources[source, :width], targets[:, :width]])
        messages = messages.view(-1, heads, conv.out_channels) * alpha[..., None]
        out = messages.new_zeros(rows, heads, conv.out_channels).index_add_(0, index, messages)
        return out.view(rows, width) if conv.concat else out.mean(1)
