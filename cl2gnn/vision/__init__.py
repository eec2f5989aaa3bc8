"""Image self-supervised learning: data, batched augmentations, models, objectives, the
pre-training loop and the kNN monitor.

* :mod:`.data`: image datasets as resident ``uint8`` tensors (:func:`load_images`);
* :mod:`.augment`: multi-view augmentations of a whole batch on its device;
* :mod:`.models`: backbones and heads (:class:`SSLNet`);
* :mod:`.objectives`: SimCLR's and SimSiam's objectives over cl2gnn's losses;
* :mod:`.optim`: LARS, the optimiser and the warm-up + cosine schedule;
* :mod:`.train`: the pre-training loop (:class:`Pretrainer`);
* :mod:`.knn_monitor`: weighted kNN and linear probes on frozen features."""

from __future__ import annotations

# an export's name must differ from every submodule's: importing the submodule binds it on
# the package and would shadow the exported object
from .augment import CIFAR_MEAN, CIFAR_STD, MultiViewAugment
from .data import DATASETS, ImageSet, load_images, read_image_folder
from .knn_monitor import knn_accuracy, linear_probe_accuracy, weighted_knn_predict
from .models import ARCHS, SSLNet, backbone, cifar_resnet, convnet, mlp
from .objectives import KERNELS, SimCLRObjective, SimSiamObjective
from .optim import LARS, build_optimizer, warmup_cosine
from .train import History, PretrainConfig, Pretrainer

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
