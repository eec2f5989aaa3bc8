"""Node-level graph contrastive learning: encoders, methods, trainers and evaluation.

The names load on first use (PEP 562), so that :mod:`cl2gnn.node.names` (the command's
choice lists) imports without torch."""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "EMBEDDINGS": ".names",
    "ENCODERS": ".names",
    "METHODS": ".names",
    "PROTOCOLS": ".names",
    "DEFAULTS": ".config",
    "NodeConfig": ".config",
    "default_config": ".config",
    "adam_probe_scores": ".evaluate",
    "make_split": ".evaluate",
    "load_node_dataset": "..datasets.nodes",
    "probe_accuracy": ".evaluate",
    "probe_scores": ".evaluate",
    "SparseFeatures": ".features",
    "prepare_features": ".features",
    "NodeObjective": ".methods",
    "GraphEncoder": ".models",
    "ProjectionHead": ".models",
    "TrainResult": ".train",
    "augment": ".train",
    "train_node_model": ".train",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
