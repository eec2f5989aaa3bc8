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

# the exports (read by lazy_exports): a name must differ from every submodule's, as
# importing the submodule binds it on the package and would shadow the exported object
if TYPE_CHECKING:
    from .augment import CIFAR_MEAN, CIFAR_STD, MultiViewAugment
    from .data import ImageSet, load_images, read_image_folder
    from .knn_monitor import knn_accuracy, linear_probe_accuracy, weighted_knn_predict
    from .models import SSLNet, backbone, cifar_resnet, convnet, mlp
    from .names import ARCHS, DATASETS, KERNELS
    from .objectives import SimCLRObjective, SimSiamObjective
    from .optim import LARS, build_optimizer, warmup_cosine
    from .train import History, PretrainConfig, Pretrainer

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals())
