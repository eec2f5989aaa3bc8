"""Full-batch training: both views of the whole graph in every step."""

from __future__ import annotations

from torch import Tensor

from ..._validation import without_value_checks
from ..encoders.propagation import ViewGraphs
from ..methods import ViewBatch
from .trainer import Trainer


class FullBatchTrainer(Trainer):
    """:class:`~cl2gnn.node.training.trainer.Trainer` on the whole graph: an epoch is one step
    on two augmented views of it (GRACE's training); :meth:`embed` runs the frozen encoder on the
    clean graph, called as PyG's models are: ``encoder(x, edge_index[, edge_weight])`` (or as
    the method embeds, :meth:`~cl2gnn.node.methods.NodeMethod.embed`)."""

    def __init__(self, data, method, config, **options) -> None:
        super().__init__(data, method, config, **options)
        device = self.device
        self.x = self.features(data).to(device)  # an encoder of one's own: transformed
        self.edge_index = data.edge_index.to(device)
        self.num_nodes = data.num_nodes
        self.graphs = None
        # the graph's weights on the device once, not a copy per step
        self.weight = None if self.edge_weight is None else self.edge_weight.to(device)
        if self.builtin:  # made once for every view: the features' forms, the graph's structure
            self.x_input = self.encoder.normalize(self.x)
            self.prepared = self.encoder.prepare(self.x)
            self.graphs = ViewGraphs(self.encoder, self.edge_index, self.num_nodes, self.weight)

    def loss_on_fresh_views(self) -> Tensor:
        """The step's forward: two fresh views of the graph and the method's loss on them,
        without a read of the device (what a compiled or captured step takes whole)."""
        if self.builtin:
            x, prepared = self.x_input, self.prepared
        else:
            x = prepared = self.x
        views = [
            self.view_input(view, x, prepared, self.edge_index, self.graphs)
            for view in self.method.views
        ]
        # the inputs were checked where they entered (the graph, the views' edges): the
        # losses' value-reading checks, each a wait for the device, are skipped (a
        # non-finite loss stops fit instead)
        with without_value_checks():
            return self.model(ViewBatch(views, self.edge_index, self.num_nodes, self.weight))

    def step(self) -> Tensor:
        """One optimiser step on two fresh views of the graph; returns the loss."""
        self.model.train()
        loss = self.loss_on_fresh_views()
        self.optimise(loss)
        return loss.detach()

    def epoch(self) -> Tensor:
        return self.step()  # on the device: fit reads the losses back per log interval

    def embed(self) -> Tensor:
        """Every node's embedding by the frozen encoder on the clean graph."""
        return self.method.embed(self.x, self.edge_index, self.weight).cpu()
