"""The image examples' choices, importable without torch (so that ``examples/simclr.py
--help`` and an argument error answer at once); the modules that implement them import
them from here."""

from __future__ import annotations

DATASETS = ("digits", "cifar10", "cifar100", "folder")
ARCHS = ("resnet18", "resnet50", "convnet")
# Kernel-InfoNCE's variants (SimCLRObjective's ``kernel``): the loss's keyword arguments
KERNELS = {
    "laplacian": {"gamma": 1.0},
    "exp0.5": {"gamma": 0.5},
    "sum": {"gamma": 1.0, "mixture": "simple"},
    "concat": {"gamma": 1.0, "mixture": "concat"},
}
