"""What the full-batch and the mini-batch trainer share: the encoder, the method, the
optimiser, one optimisation step, and the interface :func:`~cl2gnn.node.fit.fit` drives."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import NormalizeFeatures

from .config import NodeConfig
from .methods import NodeMethod, ViewBatch, make_method
from .models import GraphEncoder
from .names import EMBEDDINGS
from .views import seed_everything


class EncoderAndMethod(torch.nn.Module):
    """The encoder and the method as one module, whose forward is a step's loss (so that
    DDP sees one forward per step, and every trainable parameter in it)."""

    def __init__(self, encoder: GraphEncoder, method: NodeMethod) -> None:
        super().__init__()
        self.encoder, self.method = encoder, method

    def forward(self, batch: ViewBatch) -> Tensor:
        return self.method(self.encoder, batch)


class Trainer:
    """The state of one training run on ``data`` with ``method`` (a registered name, or an
    objective ``(z1, z2, h1, h2) -> loss``).

    Subclasses define :meth:`epoch` (one pass over the nodes; the mean loss) and :meth:`embed`
    (every node's embedding, with the trained encoder or another one such as a weight
    average); :func:`~cl2gnn.node.fit.fit` drives either.
    """

    def __init__(
        self,
        data: Data,
        method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
        config: NodeConfig,
        seed: int = 0,
        device: str | torch.device = "cpu",
        distributed: str | None = None,
    ) -> None:
        if config.embedding not in EMBEDDINGS:
            raise ValueError(f"embedding must be one of {EMBEDDINGS}, got {config.embedding!r}")
        self.config, self.device = config, device
        seed_everything(seed)
        x = data.x
        if config.normalize_features:
            x = NormalizeFeatures()(Data(x=x)).x
        self.features = x
        self.encoder = GraphEncoder(
            x.size(1),
            config.hidden,
            config.activation,
            config.encoder,
            first_hidden=config.first_hidden,
            out_activation=config.out_activation,
            batch_norm=config.batch_norm,
            self_loops=config.self_loops,
        )
        self.method = make_method(
            method,
            config,
            num_nodes=data.num_nodes,
            graph=data.edge_index,
            distributed=distributed,
            encoder=self.encoder,
        )
        self.model = EncoderAndMethod(self.encoder, self.method).to(device)
        self.label = getattr(self.method, "label", self.method.name)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(
            params, lr=config.learning_rate, weight_decay=config.weight_decay
        )
        self.steps, self.steps_per_epoch = 0, 1

    @property
    def total_steps(self) -> int:
        return max(self.config.epochs * self.steps_per_epoch, 1)

    def learning_rate(self, step: int) -> float:
        """The learning rate of optimiser step ``step`` (from 0): linear warm-up over
        ``config.lr_warmup`` epochs, then constant or a cosine decay to zero."""
        config = self.config
        warmup = config.lr_warmup * self.steps_per_epoch
        if step < warmup:
            return config.learning_rate * (step + 1) / warmup
        if not config.lr_cosine:
            return config.learning_rate
        done = (step - warmup) / max(self.total_steps - warmup, 1)
        return config.learning_rate * 0.5 * (1 + math.cos(math.pi * done))

    def optimise(self, loss: Tensor) -> None:
        """One optimiser step on ``loss``, then the method's :meth:`~NodeMethod.after_step`."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.config.lr_warmup or self.config.lr_cosine:
            for group in self.optimizer.param_groups:
                group["lr"] = self.learning_rate(self.steps)
        self.optimizer.step()
        self.steps += 1
        self.method.after_step(self.encoder, min(1.0, self.steps / self.total_steps))

    def epoch(self) -> float:
        raise NotImplementedError

    def embed(self, encoder: GraphEncoder | None = None) -> Tensor:
        raise NotImplementedError
