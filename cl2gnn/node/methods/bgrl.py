"""BGRL: bootstrapped graph latents."""

from __future__ import annotations

import torch
from torch import Tensor

from ...losses import BootstrapLoss
from ..config import NodeConfig
from .base import NodeMethod, ViewBatch, register_method
from .target import TargetEncoder, TargetOptions, predictor


@register_method("bgrl")
class BGRL(NodeMethod):
    r"""BGRL (Thakoor et al., *Large-Scale Representation Learning on Graphs via
    Bootstrapping*, ICLR 2022): the online encoder and a predictor :math:`q` on one view
    predict the other view's output of a target encoder, an exponential moving average of
    the online one (:class:`~cl2gnn.node.methods.target.TargetEncoder`); no negatives.

    In the message-passing reading this is alignment alone, :class:`~cl2gnn.nn.AlignConv`
    on the pair graph, toward a stop-gradient target: the dynamics of SimSiam and of
    :class:`~cl2gnn.nn.MultiStageMemory` (eq. 13), with the target made by a moving
    average of the encoder instead of a stored mean. Without the predictor and the moving
    average it collapses (all embeddings to one point).

    The authors' code: predictor ``Linear(d, 512) → PReLU → Linear(512, d)``; target
    re-initialised, its decay raised from 0.99 to 1 along a cosine; the encoder's layers
    GCN → batch norm → PReLU (the configuration's ``batch_norm``, ``activation``).
    Under ``torchrun`` DDP's gradient average is the global batch's gradient (there are no
    negatives to share).
    """

    Options = TargetOptions
    spans_ranks = True

    def __init__(self, config: NodeConfig, *, encoder: torch.nn.Module, **context) -> None:
        super().__init__(config, encoder=encoder, **context)
        options = self.options
        self.predictor = predictor(
            self.dim, options.predictor_hidden, options.predictor_layers, "prelu"
        )
        self.loss = BootstrapLoss()
        self.target = TargetEncoder(
            encoder, options.ema_decay, cosine=options.ema_cosine, reinitialise=True
        )

    def forward(self, encoder: torch.nn.Module, batch: ViewBatch) -> Tensor:
        h1, h2 = self.encode(encoder, batch)
        t1, t2 = (t[: batch.num_seeds] for t in self.target(batch))
        return self.loss(self.predictor(h1), self.predictor(h2), t1, t2)

    def after_step(self, encoder: torch.nn.Module, progress: float) -> None:
        self.target.update(encoder, progress)
