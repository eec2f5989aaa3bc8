"""GCA: GRACE with adaptive views."""

from __future__ import annotations

from typing import Annotated

import torch
from torch_geometric.transforms import Compose

from ..._checks import boolean, one_of
from ..adaptive_views import CENTRALITIES, ZERO_COLUMNS, AdaptiveDropEdge, AdaptiveMaskFeatures
from ..config import NodeConfig
from ..views import View
from .base import register_method
from .contrastive import GRACE, InfoNCEMethod, Keys, MatmulDtype, Views
from .options import Temperature, Width

CUT_OFF = 0.7  # p_τ, the authors' code's for both views and both augmentations


@register_method("gca")
class GCA(GRACE):
    r"""GCA (Zhu et al., *Graph Contrastive Learning with Adaptive Augmentation*, WWW 2021):
    GRACE's loss (:func:`~cl2gnn.losses.info_nce`, inter- and intra-view negatives) on
    views that drop edges and mask feature columns less often the more important they
    are (:class:`~cl2gnn.node.AdaptiveDropEdge`, :class:`~cl2gnn.node.AdaptiveMaskFeatures`
    with the configuration's ``centrality`` and ``binary_features``, mean probabilities
    ``drop_edge`` and ``drop_feature`` per view, cut off at :math:`p_\tau = 0.7`). Its
    configurations (:data:`~cl2gnn.node.presets.AUTHORS_PER_GRAPH`) row-normalise the
    features, as its code does on every graph, and its ``"rrelu"`` is the code's fixed-slope
    ``F.rrelu`` (:class:`~cl2gnn.node.encoders.graph_encoder.MeanRReLU`).

    In the message-passing reading the loss is GRACE's, alignment on the pair graph minus
    uniformity on the affinity graph; the adaptive views change the augmentation graph's
    distribution, keeping the edges into central nodes and the features present on them.
    The centralities are the whole graph's: no mini-batches, no ``torchrun``.

    Args:
        encoder (torch.nn.Module): the encoder.
        centrality (str, optional): what a node's importance is read off, ``"degree"``,
            ``"pagerank"`` or ``"eigenvector"`` (default: ``"degree"``).
        binary_features (bool, optional): a feature column's importance counts where it is
            non-zero (GCA's code on every graph but WikiCS), else its magnitude (default:
            ``True``).
        zero_columns (str, optional): a column zero on every node is masked at the cut-off
            (``"itself"``), or, as GCA's code does through a NaN, every column is
            (``"every_column"``) (default: ``"itself"``).
        proj_hidden, temperature, num_keys, matmul_dtype, dim: as :class:`GRACE`'s.
        views: the adaptive views of :meth:`default_views` unless given.
    """

    minibatch = False
    spans_ranks = False

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        centrality: Annotated[str, one_of(*CENTRALITIES)] = "degree",
        binary_features: Annotated[bool, boolean] = True,
        zero_columns: Annotated[str, one_of(*ZERO_COLUMNS)] = "itself",
        proj_hidden: Width = 128,
        temperature: Temperature = 0.4,
        num_keys: Keys = None,
        matmul_dtype: MatmulDtype = None,
        views: Views = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(
            centrality=centrality,
            binary_features=binary_features,
            zero_columns=zero_columns,
            proj_hidden=proj_hidden,
            temperature=temperature,
            num_keys=num_keys,
            matmul_dtype=matmul_dtype,
        )
        # GRACE's loss and head, GCA's options: InfoNCEMethod's constructor, not GRACE's
        InfoNCEMethod.__init__(
            self, encoder, options, views=views, dim=dim, distributed=distributed
        )

    def default_views(
        self, config: NodeConfig, generator: torch.Generator | None = None
    ) -> tuple[View, View]:
        """The adaptive views with the configuration's mean probabilities per view, the
        feature columns masked first (their importance is read off the whole graph, not the
        dropped one)."""
        options = self.options
        return tuple(
            Compose(
                [
                    AdaptiveMaskFeatures(
                        config.drop_feature[v],
                        CUT_OFF,
                        options.centrality,
                        options.binary_features,
                        options.zero_columns,
                    ),
                    AdaptiveDropEdge(config.drop_edge[v], CUT_OFF, options.centrality),
                ]
            )
            for v in (0, 1)
        )
