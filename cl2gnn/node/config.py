"""Training configurations: :class:`NodeConfig`, the published configurations of the graphs
that have one (:data:`DEFAULTS`), and the default for every other graph
(:data:`UNPUBLISHED`). Why each default is what it is, with the measurements, is on the
results page (``benchmarks/RESULTS.md``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class NodeConfig:
    """One training run's settings; :meth:`with_overrides` changes some of them.

    Model and optimisation: ``learning_rate``, ``weight_decay``, ``epochs``, the encoder
    (``encoder``: ``"gcn"``, ``"sage"`` or ``"gat"``; output width ``hidden``, its first
    layer ``2 · hidden``; ``activation``), the projection head's width ``proj_hidden`` and
    what the probe reads (``embedding``: ``"last"``, ``"concat"`` or ``"layers"``).

    Views: per view ``(view 1, view 2)``, the probability of dropping an edge
    (``drop_edge``), of masking a feature column (``drop_feature``) and of zeroing a node's
    whole feature row (``mask_nodes``, GraphMAE's masking, contrasted);
    ``normalize_features`` row-normalises the input (PyG's ``NormalizeFeatures``, as the
    GRACE and GCA code do).

    Methods: ``temperature`` of the contrastive losses, ``neighbor_weight`` of graph
    neighbours as positives (``neighbors``, ``homophily``), ``clusters`` of the
    ``homophily`` method's k-means, ``num_keys``: the uniformity term over that many views
    drawn per step instead of all ``2N`` (``None``: exact; full-batch only, a mini-batch's
    negatives are its seeds). ``swa_start``: embed with the running mean of the encoder's
    weights from that epoch on.

    Mini-batches (``batch_size`` set; ``None``: full-batch): seed nodes per step over all
    processes, in-neighbours sampled per node and hop (``num_neighbors``, ``-1``: all), and
    how a process group shares its negatives (``distributed``: ``"gather"`` or ``"ring"``).
    """

    learning_rate: float = 5e-4
    hidden: int = 128
    proj_hidden: int = 128
    activation: str = "relu"
    drop_edge: tuple[float, float] = (0.2, 0.4)
    drop_feature: tuple[float, float] = (0.3, 0.4)
    temperature: float = 0.4
    epochs: int = 200
    weight_decay: float = 1e-5
    encoder: str = "gcn"
    embedding: str = "last"
    neighbor_weight: float = 1.0
    clusters: int = 10  # HomoGCL's Cora value
    normalize_features: bool = False
    num_keys: int | None = None
    swa_start: int | None = None
    mask_nodes: tuple[float, float] = (0.0, 0.0)
    batch_size: int | None = None
    num_neighbors: tuple[int, ...] = (10, 10)
    distributed: str = "gather"

    def view_probabilities(self, view: int) -> tuple[float, float, float]:
        """``(edge drop, feature-column mask, node mask)`` probabilities of view 0 or 1."""
        return self.drop_edge[view], self.drop_feature[view], self.mask_nodes[view]

    def with_overrides(self, **changes) -> NodeConfig:
        """A copy with the given fields changed; ``None`` keeps a field as it is."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def as_dict(self) -> dict:
        return asdict(self)


# GRACE's published configurations for Planetoid, GCA's for Amazon, Coauthor and WikiCS
# (weight decay 1e-5 throughout, as both use); features raw, not row-normalised as their
# code does: the graphs on disk scored higher on their validation nodes with raw features
DEFAULTS = {
    "Cora": NodeConfig(),
    "CiteSeer": NodeConfig(
        learning_rate=1e-3,
        hidden=256,
        proj_hidden=256,
        activation="prelu",
        drop_edge=(0.2, 0.0),
        drop_feature=(0.3, 0.2),
        temperature=0.9,
        epochs=200,
    ),
    "PubMed": NodeConfig(
        learning_rate=1e-3,
        hidden=256,
        proj_hidden=256,
        activation="relu",
        drop_edge=(0.4, 0.1),
        drop_feature=(0.0, 0.2),
        temperature=0.7,
        epochs=1500,
    ),
    "Computers": NodeConfig(
        learning_rate=1e-2,
        hidden=128,
        proj_hidden=128,
        activation="rrelu",
        drop_edge=(0.6, 0.3),
        drop_feature=(0.2, 0.3),
        temperature=0.2,
        epochs=2000,
    ),
    "Photo": NodeConfig(
        learning_rate=1e-1,
        hidden=256,
        proj_hidden=64,
        activation="relu",
        drop_edge=(0.3, 0.5),
        drop_feature=(0.1, 0.1),
        temperature=0.3,
        epochs=2000,
    ),
    "CS": NodeConfig(
        learning_rate=5e-4,
        hidden=256,
        proj_hidden=256,
        activation="rrelu",
        drop_edge=(0.3, 0.2),
        drop_feature=(0.3, 0.4),
        temperature=0.4,
        epochs=1000,
    ),
    "Physics": NodeConfig(
        learning_rate=1e-2,
        hidden=128,
        proj_hidden=64,
        activation="rrelu",
        drop_edge=(0.4, 0.1),
        drop_feature=(0.1, 0.4),
        temperature=0.5,
        epochs=1500,
    ),
    "WikiCS": NodeConfig(
        learning_rate=1e-2,
        hidden=256,
        proj_hidden=256,
        activation="prelu",
        drop_edge=(0.2, 0.3),
        drop_feature=(0.1, 0.1),
        temperature=0.4,
        epochs=3000,
    ),
    # the embedded default (a 1,797-node kNN graph): narrower and shorter
    "digits-knn": NodeConfig(
        learning_rate=1e-3,
        hidden=64,
        proj_hidden=64,
        activation="relu",
        drop_edge=(0.2, 0.4),
        drop_feature=(0.2, 0.3),
        temperature=0.5,
        epochs=60,
    ),
}

# graphs without a published configuration (the heterophilous graphs, any PATH.npz): GRACE's
# Cora configuration with the GraphSAGE encoder (ego and neighbour weights apart), every
# layer read out (the input included), raw features and 256 sampled uniformity keys; chosen
# on every on-disk graph without one together, by validation scores (benchmarks/node_select.py)
UNPUBLISHED = NodeConfig(encoder="sage", embedding="layers", normalize_features=False, num_keys=256)


def default_config(dataset: str) -> NodeConfig:
    """The dataset's published configuration, else :data:`UNPUBLISHED`."""
    return DEFAULTS.get(dataset, UNPUBLISHED)
