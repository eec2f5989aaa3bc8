"""Full-batch training: both views of the whole graph in every step."""

from __future__ import annotations

import torch
from torch import Tensor

from .features import prepare_features
from .methods import ViewBatch
from .models import GraphEncoder
from .trainer import Trainer
from .views import augment


class FullBatchTrainer(Trainer):
    """:class:`~cl2gnn.node.trainer.Trainer` on the whole graph: an epoch is one step on two
    augmented views of it (GRACE's training); :meth:`embed` runs the frozen encoder on the
    clean graph."""

    def __init__(self, data, method, config, seed=0, device="cpu") -> None:
        super().__init__(data, method, config, seed, device)
        self.x = prepare_features(self.features.to(device))
        self.edge_index = data.edge_index.to(device)
        self.num_nodes = data.num_nodes

    def step(self) -> Tensor:
        """One optimiser step on two fresh views of the graph; returns the loss."""
        encoder, n = self.encoder, self.num_nodes
        self.model.train()
        views = [
            augment(self.x, self.edge_index, *self.config.view_probabilities(v)) for v in (0, 1)
        ]
        batch = ViewBatch(
            [(x, encoder.propagation_graph(e, n)) for x, e in views], self.edge_index, n
        )
        loss = self.model(batch)
        self.optimise(loss)
        return loss.detach()

    def epoch(self) -> float:
        return float(self.step())  # waits for the device: the epoch's work is done

    @torch.no_grad()
    def embed(self, encoder: GraphEncoder | None = None) -> Tensor:
        """Every node's embedding (``config.embedding``) by the frozen ``encoder`` (default:
        the trained one) on the clean graph."""
        encoder = encoder or self.encoder
        was_training = encoder.training
        encoder.eval()
        graph = encoder.propagation_graph(self.edge_index, self.num_nodes)
        out = encoder(self.x, graph, readout=self.config.embedding).cpu()
        encoder.train(was_training)
        return out
