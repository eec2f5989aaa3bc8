"""Node-level graph self-supervised learning: encoders, methods, trainers and evaluation.

* :mod:`.methods`: every method a class in one registry (:data:`~.methods.REGISTRY`);
* :mod:`.fullbatch`, :mod:`.minibatch`: the two trainers, one interface (an epoch, embed);
  the mini-batches' seeds from :mod:`.sampler`, layer-wise inference in :mod:`.inference`;
* :mod:`.fit`: the one training loop (:func:`fit`, :func:`train_node_model`);
* :mod:`.models`, :mod:`.features`, :mod:`.views`: encoders, sparse features, the views
  (PyG transforms);
* :mod:`.result`: what training returns, embedding with it, saving it and loading it back;
  :mod:`.checkpoint`: a run's state, which resumes it;
* :mod:`.inputs`: the checks of what training is given;
* :mod:`.evaluate`: the frozen-embedding probes and the protocols' splits;
* :mod:`.config`: :class:`NodeConfig` and the published configurations.

The names load on first use (PEP 562), so that :mod:`cl2gnn.node.names` (the command's
choice lists) imports without torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # the exports, read by lazy_exports
    from ..datasets.nodes import load_node_dataset
    from .adaptive_views import AdaptiveDropEdge, AdaptiveMaskFeatures
    from .config import GRACE_PUBLISHED, NodeConfig
    from .defaults import default_config, default_method
    from .evaluation.probes import adam_probe_scores, make_split, probe_score, probe_scores
    from .encoders.features import SparseFeatures, prepare_features
    from .training.fit import fit
    from .training.fullbatch import FullBatchTrainer
    from .methods import REGISTRY, EncoderInput, NodeMethod, ViewBatch, make_method
    from .training.minibatch import MinibatchTrainer
    from .encoders.graph_encoder import GraphEncoder, ProjectionHead
    from .names import EMBEDDINGS, ENCODERS, METHODS, PROTOCOLS
    from .result import TrainResult, load_encoder
    from .api import train_node_model
    from .views import Diffusion, DropEdge, MaskFeatures

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals())
