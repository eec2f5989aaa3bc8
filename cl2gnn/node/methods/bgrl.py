"""BGRL: bootstrapped graph latents."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from ...losses import BootstrapLoss
from ..views import View
from .base import NodeMethod, ViewBatch, register_method
from .options import Flag, Width
from .target import Decay, PredictorLayers, TargetEncoder, predictor


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

    Args:
        encoder (torch.nn.Module): the online encoder (the target is a re-initialised copy).
        predictor_hidden (int, optional): the predictor's hidden width (default: ``512``).
        predictor_layers (int, optional): its layers (``0``: none) (default: ``2``).
        ema_decay (float, optional): the target's moving-average decay (default: ``0.99``).
        ema_cosine (bool, optional): raise it to 1 along a cosine over training, as
            :meth:`after_step`'s ``progress`` goes from 0 to 1 (default: ``False``).
        views, dim, distributed: as :class:`~cl2gnn.node.NodeMethod`'s.

    Examples:
        >>> method = BGRL(GCN(1433, 512, num_layers=2, out_channels=256))
        >>> loss = method(data); loss.backward(); optimizer.step()
        >>> method.after_step(progress=epoch / epochs)  # the target follows
    """

    spans_ranks = True

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        predictor_hidden: Width = 512,
        predictor_layers: PredictorLayers = 2,
        ema_decay: Decay = 0.99,
        ema_cosine: Flag = False,
        views: View | tuple[View, View] | None = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(
            predictor_hidden=predictor_hidden,
            predictor_layers=predictor_layers,
            ema_decay=ema_decay,
            ema_cosine=ema_cosine,
        )
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        self.predictor = predictor(self.dim, predictor_hidden, predictor_layers, "prelu")
        self.loss = BootstrapLoss()
        self.target = TargetEncoder(encoder, ema_decay, cosine=ema_cosine, reinitialise=True)

    def forward(self, data: Data | ViewBatch) -> Tensor:
        batch = self.view_batch(data)
        h1, h2 = self.encode(batch)
        t1, t2 = (t[: batch.num_seeds] for t in self.target(batch))
        return self.loss(self.predictor(h1), self.predictor(h2), t1, t2)

    def after_step(self, progress: float = 1.0) -> None:
        self.target.update(self.encoder, progress)
