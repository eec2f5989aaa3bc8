"""Node-level graph self-supervised learning, as rooms:

* :mod:`.config`: :class:`NodeConfig`, the core of a run's settings; :mod:`.presets`: the
  papers' configurations and method ``auto``'s candidates, as data;
* :mod:`.methods`: every method a class with its own options, in one registry;
* :mod:`.encoders`: the built-in encoder (:class:`GraphEncoder`, its propagation graphs and
  features) and what the library asks of an encoder of one's own;
* :mod:`.views`, :mod:`.adaptive_views`: the views (PyG transforms);
* :mod:`.training`: every compatibility rule once (:mod:`.training.plan`), the trainers
  (full batch, mini-batch), the one loop (:func:`fit`), checkpoints;
* :mod:`.evaluation`: the probes and splits, method ``auto``, and the experiment the
  ``cl2gnn node`` command runs (:func:`~cl2gnn.node.evaluation.experiment.run_experiment`);
* :mod:`.api`: :func:`train_node_model` and :func:`default_config`; :mod:`.result`: what
  training returns, saved and loaded back;
* :mod:`.inputs`: the checks of what training is given.

The names load on first use (an explicit map, :data:`EXPORTS`), so that the torch-free
:mod:`.config` and :mod:`.presets` import without torch (the ``cl2gnn`` command reads them
before it loads any)."""

from __future__ import annotations

import importlib

from . import config  # torch-free

# each exported name -> the module that defines it
EXPORTS = {
    "adam_probe_scores": ".evaluation.probes",
    "AdaptiveDropEdge": ".adaptive_views",
    "AdaptiveMaskFeatures": ".adaptive_views",
    "AUTO": ".api",
    "Attention": ".methods.attention",
    "BGRL": ".methods",
    "CallableObjective": ".methods",
    "CCASSG": ".methods",
    "DeepGraphInfomax": ".methods",
    "GCA": ".methods",
    "GRACE": ".methods",
    "GraphACL": ".methods",
    "GraphBarlowTwins": ".methods",
    "Homophily": ".methods.neighbors",
    "KernelInfoNCE": ".methods.kernel",
    "KNearest": ".methods.knn",
    "MultiStage": ".methods.multistage",
    "MVGRL": ".methods",
    "Neighbors": ".methods.neighbors",
    "PolyGCL": ".methods",
    "RandomWalk": ".methods.random_walk",
    "Spectral": ".methods.spectral",
    "choose_method": ".evaluation.auto",
    "Choice": ".evaluation.auto",
    "default_config": ".api",
    "default_method": ".api",
    "Diffusion": ".views",
    "DropEdge": ".views",
    "EMBEDDINGS": ".config",
    "EncoderInput": ".methods",
    "ENCODERS": ".config",
    "fit": ".training.fit",
    "FullBatchTrainer": ".training.fullbatch",
    "GRACE_PUBLISHED": ".presets",
    "GraphEncoder": ".encoders.graph_encoder",
    "load_encoder": ".result",
    "load_node_dataset": "..datasets.nodes",
    "make_split": ".evaluation.probes",
    "MaskFeatures": ".views",
    "MethodOptions": ".methods",
    "METHODS": ".methods",
    "MinibatchTrainer": ".training.minibatch",
    "NodeConfig": ".config",
    "NodeMethod": ".methods",
    "prepare_features": ".encoders.features",
    "probe_score": ".evaluation.probes",
    "probe_scores": ".evaluation.probes",
    "ProjectionHead": ".methods.heads",
    "PROTOCOLS": ".evaluation.probes",
    "REGISTRY": ".methods",
    "SparseFeatures": ".encoders.features",
    "train_node_model": ".api",
    "TrainResult": ".result",
    "ViewBatch": ".methods",
}
__all__ = sorted(EXPORTS)


def _option_names() -> tuple[str, ...]:
    from .methods import option_names  # the registry, and torch: only when a name is asked

    return option_names()


config.option_names = _option_names  # what a configuration's option names are checked by


def __getattr__(name: str):
    if name not in EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(EXPORTS[name], __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *EXPORTS})
