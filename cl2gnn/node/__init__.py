"""Node-level graph contrastive learning: datasets, encoders, methods, training, evaluation.

The submodules load on first use (PEP 562), so that ``cl2gnn.node.names`` (the command's
choice lists) is importable without torch."""

from __future__ import annotations

import importlib

# public name -> submodule that defines it
_EXPORTS = {
    "DATASETS": "names",
    "EMBEDDED": "names",
    "EMBEDDINGS": "names",
    "ENCODERS": "names",
    "METHODS": "names",
    "PROTOCOLS": "names",
    "DEFAULTS": "config",
    "NodeConfig": "config",
    "default_config": "config",
    "load_node_dataset": "datasets",
    "adam_probe_scores": "evaluate",
    "make_split": "evaluate",
    "probe_accuracy": "evaluate",
    "probe_scores": "evaluate",
    "SparseFeatures": "features",
    "prepare_features": "features",
    "NodeObjective": "methods",
    "GraphEncoder": "models",
    "ProjectionHead": "models",
    "format_table": "run",
    "run_node": "run",
    "TrainResult": "train",
    "augment": "train",
    "train_node_model": "train",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
