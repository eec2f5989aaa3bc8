"""Node-level graph self-supervised learning: encoders, methods, trainers and evaluation.

* :mod:`.methods`: every method a class in one registry (:data:`~.methods.REGISTRY`);
* :mod:`.fullbatch`, :mod:`.minibatch`: the two trainers, one interface (an epoch, embed);
* :mod:`.fit`: the one training loop (:func:`fit`, :func:`train_node_model`);
* :mod:`.models`, :mod:`.features`, :mod:`.views`: encoders, sparse features, the views
  (PyG transforms);
* :mod:`.result`: what training returns, saving it and loading the encoder back;
* :mod:`.inputs`: the checks of what training is given;
* :mod:`.evaluate`: the frozen-embedding probes and the protocols' splits;
* :mod:`.config`: :class:`NodeConfig` and the published configurations.

The names load on first use (PEP 562), so that :mod:`cl2gnn.node.names` (the command's
choice lists) imports without torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ..datasets.nodes import load_node_dataset
    from .adaptive_views import AdaptiveDropEdge, AdaptiveMaskFeatures
    from .config import DEFAULTS, NodeConfig
    from .defaults import default_config, default_method
    from .evaluate import adam_probe_scores, make_split, probe_accuracy, probe_score, probe_scores
    from .features import SparseFeatures, prepare_features
    from .fit import fit
    from .fullbatch import FullBatchTrainer
    from .methods import REGISTRY, EncoderInput, NodeMethod, ViewBatch, make_method
    from .minibatch import MinibatchTrainer
    from .models import GraphEncoder, ProjectionHead
    from .names import EMBEDDINGS, ENCODERS, METHODS, PROTOCOLS
    from .result import TrainResult, load_encoder
    from .train import train_node_model
    from .views import Diffusion, DropEdge, MaskFeatures

_EXPORTS = {
    "EMBEDDINGS": ".names",
    "ENCODERS": ".names",
    "METHODS": ".names",
    "PROTOCOLS": ".names",
    "DEFAULTS": ".config",
    "NodeConfig": ".config",
    "default_config": ".defaults",
    "default_method": ".defaults",
    "adam_probe_scores": ".evaluate",
    "make_split": ".evaluate",
    "probe_accuracy": ".evaluate",
    "probe_score": ".evaluate",
    "probe_scores": ".evaluate",
    "SparseFeatures": ".features",
    "prepare_features": ".features",
    "TrainResult": ".result",
    "load_encoder": ".result",
    "fit": ".fit",
    "train_node_model": ".train",
    "FullBatchTrainer": ".fullbatch",
    "MinibatchTrainer": ".minibatch",
    "REGISTRY": ".methods",
    "EncoderInput": ".methods",
    "NodeMethod": ".methods",
    "ViewBatch": ".methods",
    "make_method": ".methods",
    "GraphEncoder": ".models",
    "ProjectionHead": ".models",
    "DropEdge": ".views",
    "MaskFeatures": ".views",
    "Diffusion": ".views",
    "AdaptiveDropEdge": ".adaptive_views",
    "AdaptiveMaskFeatures": ".adaptive_views",
    "load_node_dataset": "..datasets.nodes",
}
__all__ = [
    "DEFAULTS",
    "EMBEDDINGS",
    "ENCODERS",
    "METHODS",
    "PROTOCOLS",
    "REGISTRY",
    "AdaptiveDropEdge",
    "AdaptiveMaskFeatures",
    "Diffusion",
    "DropEdge",
    "EncoderInput",
    "FullBatchTrainer",
    "GraphEncoder",
    "MaskFeatures",
    "MinibatchTrainer",
    "NodeConfig",
    "NodeMethod",
    "ProjectionHead",
    "SparseFeatures",
    "TrainResult",
    "ViewBatch",
    "adam_probe_scores",
    "default_config",
    "default_method",
    "fit",
    "load_encoder",
    "load_node_dataset",
    "make_method",
    "make_split",
    "prepare_features",
    "probe_accuracy",
    "probe_score",
    "probe_scores",
    "train_node_model",
]
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
