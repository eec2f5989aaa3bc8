"""Node-level graph contrastive learning: datasets, encoders, methods, training, evaluation."""

from .config import DEFAULTS, EMBEDDINGS, NodeConfig, default_config
from .datasets import DATASETS, EMBEDDED, load_node_dataset
from .evaluate import PROTOCOLS, adam_probe_scores, make_split, probe_accuracy, probe_scores
from .features import SparseFeatures, prepare_features
from .methods import METHODS, NodeObjective
from .models import GraphEncoder, ProjectionHead
from .run import format_table, run_node
from .train import TrainResult, augment, train_node_model

__all__ = [
    "DATASETS",
    "DEFAULTS",
    "EMBEDDED",
    "EMBEDDINGS",
    "METHODS",
    "PROTOCOLS",
    "GraphEncoder",
    "NodeConfig",
    "NodeObjective",
    "ProjectionHead",
    "SparseFeatures",
    "TrainResult",
    "adam_probe_scores",
    "augment",
    "default_config",
    "format_table",
    "load_node_dataset",
    "make_split",
    "prepare_features",
    "probe_accuracy",
    "probe_scores",
    "run_node",
    "train_node_model",
]
