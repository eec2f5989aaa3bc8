"""SimCLR-style multi-view augmentations computed for a whole batch at once on the images'
device, from ``uint8`` images kept resident there; no per-image Python loop.

Per sample: RandomResizedCrop (one ``affine_grid`` + ``grid_sample`` for the batch, the
horizontal flip folded into the affine), colour jitter (brightness, contrast, saturation,
hue, in that order) with probability ``jitter_p``, grayscale, Gaussian blur (grouped
convolution with per-sample kernels) and solarisation, each with its own probability.
All randomness comes from the ``torch.Generator`` passed in, so a seed repeats the views.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def _uniform(n: int, low: float, high: float, gen: torch.Generator, device) -> Tensor:
    return torch.rand(n, generator=gen, device=device) * (high - low) + low


def crop_boxes(n, scale, ratio, gen, device, tries: int = 10) -> tuple[Tensor, Tensor]:
    """Half-extents ``(w, h)`` of RandomResizedCrop boxes in normalised ``[-1, 1]`` units:
    the first of ``tries`` draws that fits, else the whole image (as torchvision falls back)."""
    area = _uniform(n * tries, scale[0], scale[1], gen, device).view(n, tries)
    log_r = _uniform(n * tries, math.log(ratio[0]), math.log(ratio[1]), gen, device)
    aspect = log_r.exp().view(n, tries)
    w, h = (area * aspect).sqrt(), (area / aspect).sqrt()
    fits = (w <= 1) & (h <= 1)
    first = torch.argmax(fits.int(), dim=1)
    rows = torch.arange(n, device=device)
    ok = fits[rows, first]
    w = torch.where(ok, w[rows, first], torch.ones_like(ok, dtype=w.dtype))
    h = torch.where(ok, h[rows, first], torch.ones_like(ok, dtype=h.dtype))
    return w, h


def rgb_to_hsv(x: Tensor) -> Tensor:
    r, g, b = x.unbind(1)
    maxc, _ = x.max(1)
    minc, _ = x.min(1)
    delta = maxc - minc
    s = torch.where(maxc > 0, delta / maxc.clamp(min=1e-8), torch.zeros_like(maxc))
    safe = delta.clamp(min=1e-8)
    h = torch.where(
        maxc == r,
        ((g - b) / safe) % 6,
        torch.where(maxc == g, (b - r) / safe + 2, (r - g) / safe + 4),
    )
    h = torch.where(delta > 0, h / 6, torch.zeros_like(h))
    return torch.stack([h, s, maxc], 1)


def hsv_to_rgb(x: Tensor) -> Tensor:
    h, s, v = x.unbind(1)
    k = torch.stack([(5 + h * 6) % 6, (3 + h * 6) % 6, (1 + h * 6) % 6], 1)
    return v[:, None] - v[:, None] * s[:, None] * torch.clamp(torch.minimum(k, 4 - k), 0, 1)


def _gray(x: Tensor) -> Tensor:
    if x.size(1) == 1:
        return x
    weights = torch.tensor([0.299, 0.587, 0.114], device=x.device, dtype=x.dtype)
    return (x * weights[None, :, None, None]).sum(1, keepdim=True)


@dataclass
class MultiViewAugment:
    """Random views of a ``uint8`` batch ``[B, C, H, W]`` -> normalised float ``[B, C, s, s]``.

    Args:
        size: output side length.
        scale, ratio: RandomResizedCrop area fraction and aspect-ratio ranges.
        flip_p: horizontal flip probability.
        jitter: brightness, contrast, saturation, hue strengths; ``jitter_p`` its probability.
        gray_p, blur_p, solarize_p: probabilities of grayscale, blur, solarisation.
        mean, std: per-channel normalisation (``None``: 0.5 for every channel).
    """

    size: int = 32
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip_p: float = 0.5
    jitter: tuple[float, float, float, float] = (0.4, 0.4, 0.4, 0.1)
    jitter_p: float = 0.8
    gray_p: float = 0.2
    blur_p: float = 0.0
    solarize_p: float = 0.0
    mean: tuple[float, ...] | None = CIFAR_MEAN
    std: tuple[float, ...] | None = CIFAR_STD

    def __call__(self, images: Tensor, generator: torch.Generator) -> Tensor:
        if images.dtype != torch.uint8 or images.dim() != 4:
            raise ValueError(
                f"expected uint8 images [B, C, H, W], got {images.dtype} {tuple(images.shape)}"
            )
        n, c, device = images.size(0), images.size(1), images.device
        x = images.float().div_(255)
        x = self._crop_flip(x, generator)
        x = self._jitter(x, generator)
        if c == 3 and self.gray_p > 0:
            gray = self._coin(n, self.gray_p, generator, device)
            x = torch.where(gray[:, None, None, None], _gray(x).expand_as(x), x)
        if self.blur_p > 0:
            x = self._blur(x, generator)
        if self.solarize_p > 0:
            sol = self._coin(n, self.solarize_p, generator, device)[:, None, None, None]
            x = torch.where(sol & (x >= 0.5), 1 - x, x)
        return self.normalize(x)

    def normalize(self, x: Tensor) -> Tensor:
        """Per-channel standardisation of ``[0, 1]`` images (what every view ends with)."""
        c = x.size(1)
        mean = torch.tensor((self.mean or (0.5,) * c)[:c], device=x.device, dtype=x.dtype)
        std = torch.tensor((self.std or (0.5,) * c)[:c], device=x.device, dtype=x.dtype)
        return (x - mean[None, :, None, None]) / std[None, :, None, None]

    def evaluation_view(self, images: Tensor) -> Tensor:
        """The un-augmented view of ``uint8`` images: resized to ``size``, normalised."""
        x = images.float().div_(255)
        if x.size(-1) != self.size:
            x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return self.normalize(x)

    @staticmethod
    def _coin(n: int, p: float, gen, device) -> Tensor:
        return torch.rand(n, generator=gen, device=device) < p

    def _crop_flip(self, x: Tensor, gen) -> Tensor:
        n, device = x.size(0), x.device
        w, h = crop_boxes(n, self.scale, self.ratio, gen, device)
        cx = (torch.rand(n, generator=gen, device=device) * 2 - 1) * (1 - w)
        cy = (torch.rand(n, generator=gen, device=device) * 2 - 1) * (1 - h)
        flip = torch.where(self._coin(n, self.flip_p, gen, device), -1.0, 1.0)
        theta = torch.zeros(n, 2, 3, device=device)
        theta[:, 0, 0], theta[:, 0, 2] = w * flip, cx
        theta[:, 1, 1], theta[:, 1, 2] = h, cy
        grid = F.affine_grid(theta, [n, x.size(1), self.size, self.size], align_corners=False)
        return F.grid_sample(
            x, grid, mode="bilinear", padding_mode="reflection", align_corners=False
        )

    def _jitter(self, x: Tensor, gen) -> Tensor:
        n, device = x.size(0), x.device
        bright, contrast, sat, hue = self.jitter
        apply = self._coin(n, self.jitter_p, gen, device)[:, None, None, None]
        y = x
        if bright > 0:
            y = (y * _uniform(n, 1 - bright, 1 + bright, gen, device)[:, None, None, None]).clamp(
                0, 1
            )
        if contrast > 0:
            factor = _uniform(n, 1 - contrast, 1 + contrast, gen, device)[:, None, None, None]
            mean = _gray(y).mean(dim=(1, 2, 3), keepdim=True)
            y = ((y - mean) * factor + mean).clamp(0, 1)
        if x.size(1) == 3:
            if sat > 0:
                factor = _uniform(n, 1 - sat, 1 + sat, gen, device)[:, None, None, None]
                gray = _gray(y)
                y = ((y - gray) * factor + gray).clamp(0, 1)
            if hue > 0:
                shift = _uniform(n, -hue, hue, gen, device)[:, None, None]
                hsv = rgb_to_hsv(y)
                hsv[:, 0] = (hsv[:, 0] + shift) % 1.0
                y = hsv_to_rgb(hsv).clamp(0, 1)
        return torch.where(apply, y, x)

    def _blur(self, x: Tensor, gen) -> Tensor:
        n, c, side, device = x.size(0), x.size(1), x.size(-1), x.device
        radius = max(1, int(0.1 * side) // 2)
        sigma = _uniform(n, 0.1, 2.0, gen, device)
        offsets = torch.arange(-radius, radius + 1, device=device, dtype=x.dtype)
        kernel = torch.exp(-(offsets[None, :] ** 2) / (2 * sigma[:, None] ** 2))
        kernel = kernel / kernel.sum(1, keepdim=True)
        keep = ~self._coin(n, self.blur_p, gen, device)
        kernel[keep] = 0
        kernel[keep, radius] = 1  # identity for the samples not blurred
        weights = kernel.repeat_interleave(c, 0)  # [n*c, k]
        flat = x.reshape(1, n * c, side, side)
        pad = (radius, radius, radius, radius)
        flat = F.conv2d(F.pad(flat, pad, mode="reflect"), weights[:, None, None, :], groups=n * c)
        flat = F.conv2d(flat, weights[:, None, :, None], groups=n * c)
        return flat.reshape(n, c, side, side)
