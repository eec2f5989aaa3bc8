"""Image self-supervised learning: data, batched augmentations, models, objectives, the
pre-training loop and the kNN monitor.

* :mod:`.data`: image datasets as resident ``uint8`` tensors (:func:`load_images`);
* :mod:`.augment`: multi-view augmentations of a whole batch on its device;
* :mod:`.models`: backbones and heads (:class:`SSLNet`);
* :mod:`.objectives`: SimCLR's and SimSiam's objectives over cl2gnn's losses;
* :mod:`.optim`: LARS, the optimiser and the warm-up + cosine schedule;
* :mod:`.train`: the pre-training loop (:class:`Pretrainer`);
* :mod:`.knn_monitor`: weighted kNN and linear probes on frozen features.

The names load on first use (PEP 562), so that :mod:`cl2gnn.vision.names` (the command's
choice lists) imports without torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .augment import CIFAR_MEAN, CIFAR_STD, MultiViewAugment
    from .data import ImageSet, load_images, read_image_folder
    from .knn_monitor import knn_accuracy, linear_probe_accuracy, weighted_knn_predict
    from .models import SSLNet, backbone, cifar_resnet, convnet, mlp
    from .names import ARCHS, DATASETS, KERNELS
    from .objectives import SimCLRObjective, SimSiamObjective
    from .optim import LARS, build_optimizer, warmup_cosine
    from .train import History, PretrainConfig, Pretrainer

# a name here must differ from every submodule's: importing the submodule binds it on the
# package and would shadow the exported object
_EXPORTS = {
    "CIFAR_MEAN": ".augment",
    "CIFAR_STD": ".augment",
    "MultiViewAugment": ".augment",
    "ImageSet": ".data",
    "load_images": ".data",
    "read_image_folder": ".data",
    "knn_accuracy": ".knn_monitor",
    "linear_probe_accuracy": ".knn_monitor",
    "weighted_knn_predict": ".knn_monitor",
    "SSLNet": ".models",
    "backbone": ".models",
    "cifar_resnet": ".models",
    "convnet": ".models",
    "mlp": ".models",
    "ARCHS": ".names",
    "DATASETS": ".names",
    "KERNELS": ".names",
    "SimCLRObjective": ".objectives",
    "SimSiamObjective": ".objectives",
    "LARS": ".optim",
    "build_optimizer": ".optim",
    "warmup_cosine": ".optim",
    "History": ".train",
    "PretrainConfig": ".train",
    "Pretrainer": ".train",
}
__all__ = [
    "ARCHS",
    "CIFAR_MEAN",
    "CIFAR_STD",
    "DATASETS",
    "KERNELS",
    "LARS",
    "History",
    "ImageSet",
    "MultiViewAugment",
    "PretrainConfig",
    "Pretrainer",
    "SSLNet",
    "SimCLRObjective",
    "SimSiamObjective",
    "backbone",
    "build_optimizer",
    "cifar_resnet",
    "convnet",
    "knn_accuracy",
    "linear_probe_accuracy",
    "load_images",
    "mlp",
    "read_image_folder",
    "warmup_cosine",
    "weighted_knn_predict",
]
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
