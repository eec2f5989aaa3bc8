"""Backbones and heads: torchvision's ResNets with the CIFAR stem (3×3 stride-1 conv, no
max-pool), a small ConvNet for 8×8 digits, SimCLR/SimSiam projection and prediction heads."""

from __future__ import annotations

import itertools

import torch
from torch import nn

ARCHS = ("resnet18", "resnet50", "convnet")


def cifar_resnet(arch: str = "resnet18", in_channels: int = 3) -> tuple[nn.Module, int]:
    """``(backbone, feature_dim)``: torchvision's ResNet with a CIFAR stem and no classifier."""
    import torchvision  # here: the digits' ConvNet runs without it

    net = getattr(torchvision.models, arch)(weights=None)
    net.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
    net.maxpool = nn.Identity()
    dim = net.fc.in_features
    net.fc = nn.Identity()
    return net, dim


def convnet(in_channels: int = 1, width: int = 32) -> tuple[nn.Module, int]:
    """A small ConvNet for tiny images (the 8×8 digits)."""

    def block(cin: int, cout: int, stride: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    layers = [
        *block(in_channels, width, 1),
        *block(width, width, 1),
        *block(width, 2 * width, 2),
        *block(2 * width, 2 * width, 1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    ]
    return nn.Sequential(*layers), 2 * width


def backbone(arch: str, in_channels: int) -> tuple[nn.Module, int]:
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    return convnet(in_channels) if arch == "convnet" else cifar_resnet(arch, in_channels)


def mlp(dims: list[int], last_bn: bool = False, last_bias: bool = True) -> nn.Sequential:
    """Linear-BN-ReLU blocks; the last layer plain (optionally BN without affine)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(dims)):
        last = i == len(dims) - 2
        layers.append(nn.Linear(a, b, bias=last and last_bias))
        if not last:
            layers += [nn.BatchNorm1d(b), nn.ReLU()]
        elif last_bn:
            layers.append(nn.BatchNorm1d(b, affine=False))
    return nn.Sequential(*layers)


class SSLNet(nn.Module):
    """Backbone + projector (+ predictor for SimSiam); ``forward`` returns ``(h, z, p)``."""

    def __init__(
        self,
        arch: str,
        in_channels: int,
        proj_dims: tuple[int, ...] = (2048, 128),
        predictor_hidden: int | None = None,
        simsiam: bool = False,
    ) -> None:
        super().__init__()
        self.backbone, dim = backbone(arch, in_channels)
        self.projector = mlp([dim, *proj_dims], last_bn=simsiam, last_bias=not simsiam)
        out = proj_dims[-1]
        self.predictor = mlp([out, predictor_hidden, out]) if predictor_hidden else None
        self.feature_dim, self.out_dim = dim, out

    def forward(self, x: torch.Tensor):
        h = self.backbone(x)
        z = self.projector(h)
        p = self.predictor(z) if self.predictor is not None else None
        return h, z, p
