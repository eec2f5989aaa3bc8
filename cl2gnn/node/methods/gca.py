"""GCA: GRACE with adaptive views."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch_geometric.transforms import Compose

from ..._checks import boolean, one_of
from ..adaptive_views import CENTRALITIES, ZERO_COLUMNS, AdaptiveDropEdge, AdaptiveMaskFeatures
from ..config import NodeConfig
from ..views import View
from .base import register_method
from .contrastive import Grace, InfoNCEOptions
from .options import option

CUT_OFF = 0.7  # p_τ, the authors' code's for both views and both augmentations


@dataclass(frozen=True)
class GCAOptions(InfoNCEOptions):
    """What the adaptive views read a node's importance off, whether a feature column's
    importance counts where it is non-zero (``binary_features``, GCA's code on every graph
    but WikiCS) or its magnitude (WikiCS's dense features), and what a column that is zero
    on every node does (``zero_columns``: ``"itself"``, masked at the cut-off; GCA's code,
    ``"every_column"``, masks every column at the cut-off through a NaN: on Cora it costs
    the row-normalised features several points, ``benchmarks/RESULTS.md``)."""

    centrality: str = option("degree", one_of(*CENTRALITIES))
    binary_features: bool = option(True, boolean)
    zero_columns: str = option("itself", one_of(*ZERO_COLUMNS))


@register_method("gca")
class GCA(Grace):
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
    """

    Options = GCAOptions
    minibatch = False
    spans_ranks = False

    def default_views(
        self, config: NodeConfig, generator: torch.Generator | None = None
    ) -> tuple[View, View]:
        centrality = self.options.centrality
        # the features first: their importance is read off the whole graph, not the dropped one
        return tuple(
            Compose(
                [
                    AdaptiveMaskFeatures(
                        config.drop_feature[v],
                        CUT_OFF,
                        centrality,
                        self.options.binary_features,
                        self.options.zero_columns,
                    ),
                    AdaptiveDropEdge(config.drop_edge[v], CUT_OFF, centrality),
                ]
            )
            for v in (0, 1)
        )
