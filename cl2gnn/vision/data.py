"""Image datasets as resident ``uint8`` tensors ``[N, C, H, W]`` plus labels.

* ``digits``: scikit-learn's 1,797 real 8×8 digits (embedded, no download), a fixed 80/20
  split;
* ``cifar10`` / ``cifar100``: through torchvision (downloaded into the cache on a user's
  machine); for ``cifar10`` an ImageFolder zip pair ``<root>/{train,test}.zip`` is used
  when present (``$CL2GNN_DATA/cifar10-jpeg`` by default);
* ``folder``: an ImageFolder tree (``<root>/<split>/<class>/*.jpg``) or a zip of one.

Decoded folders/zips are cached as ``.pt`` files under ``$CL2GNN_CACHE/vision`` (written
whole or not at all; one that cannot be read is rebuilt). A file that cannot be read — a
truncated zip, an image that does not decode, CIFAR's files damaged where no download can
replace them — raises ``ValueError`` naming the file.

Under a process group (``torchrun``) every rank calls :func:`load_images`; rank 0 downloads,
extracts and decodes first while the others wait, then they read its files and cache
(:func:`~cl2gnn.distributed.launch.rank_zero_first`).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import tarfile
import urllib.error
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from .. import _files
from .._checks import first_line
from .._files import cache_dir
from ..distributed.launch import rank_zero_first

DATASETS = ("digits", "cifar10", "cifar100", "folder")


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


@dataclass
class ImageSet:
    images: Tensor  # uint8 [N, C, H, W]
    labels: Tensor  # int64 [N]
    classes: list[str]

    def __len__(self) -> int:
        return self.labels.numel()

    def sample(self, size: int, seed: int = 0) -> ImageSet:
        """``size`` images drawn at random without replacement (the same ones for a seed).
        Not the first ``size``: image folders list their files class by class."""
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if size >= len(self):
            return self
        idx = torch.randperm(len(self), generator=torch.Generator().manual_seed(seed))[:size]
        return ImageSet(self.images[idx], self.labels[idx], self.classes)


def load_images(name: str, root: str | None = None, train: bool = True) -> ImageSet:
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {name!r}")
    split = "train" if train else "test"
    if name == "digits":
        return _digits(train)
    if name == "cifar10" and root is None and os.environ.get("CL2GNN_DATA"):
        candidate = Path(os.environ["CL2GNN_DATA"]) / "cifar10-jpeg"
        if (candidate / f"{split}.zip").exists():
            root = str(candidate)
    if name == "folder" or (root is not None and _is_folder_root(Path(root), split)):
        if root is None:
            raise ValueError("dataset 'folder' needs --data-root")
        return rank_zero_first(lambda: read_image_folder(Path(root), split), f"reading {root}")
    return rank_zero_first(lambda: _torchvision(name, root, train), f"preparing {name}")


def _is_folder_root(root: Path, split: str) -> bool:
    return (root / f"{split}.zip").exists() or (root / split).is_dir() or root.suffix == ".zip"


def _digits(train: bool) -> ImageSet:
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = torch.tensor(digits.images * (255.0 / 16.0)).round().to(torch.uint8)[:, None]
    labels = torch.tensor(digits.target)
    perm = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    cut = int(0.8 * len(labels))
    idx = perm[:cut] if train else perm[cut:]
    return ImageSet(images[idx], labels[idx], [str(d) for d in range(10)])


def _torchvision(name: str, root: str | None, train: bool) -> ImageSet:
    import torchvision

    cls = torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100
    target = root or str(cache_dir() / "vision" / name)
    try:
        dataset = cls(target, train=train, download=True)
    except urllib.error.URLError as error:  # the files are not there whole, no download
        raise ValueError(
            f"{target}: {name} is missing or damaged there and could not be downloaded "
            f"({error.reason})"
        ) from error
    except (RuntimeError, EOFError, tarfile.TarError, pickle.UnpicklingError, zlib.error) as error:
        raise ValueError(f"{target}: cannot read {name}: {first_line(error)}") from error
    images = torch.from_numpy(np.asarray(dataset.data)).permute(0, 3, 1, 2).contiguous()
    return ImageSet(images, torch.tensor(dataset.targets), list(dataset.classes))


def read_image_folder(root: Path, split: str = "train") -> ImageSet:
    """An ImageFolder tree or zip: ``<split>/<class>/<image>`` (or ``<class>/<image>``)."""
    source = root / f"{split}.zip" if (root / f"{split}.zip").exists() else root
    try:
        files = _list_images(source, split)
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise ValueError(f"{source}: not a readable zip file ({first_line(error)})") from error
    cached = cache_dir() / "vision" / f"folder-{_cache_key(source, split, files)}.pt"
    if cached.exists():
        try:
            return ImageSet(**torch.load(cached, weights_only=True))
        except (RuntimeError, EOFError, pickle.UnpicklingError, TypeError):
            pass  # the cache is ours: one that cannot be read is built again
    if not files:
        raise ValueError(f"no images found under {source} (expected <class>/<image> folders)")
    classes = sorted({cls for cls, _ in files})
    index = {cls: i for i, cls in enumerate(classes)}
    images, labels = [], []
    for cls, data, where in _read(source, files):
        try:
            images.append(_decode(data))
        except RuntimeError as error:
            # torchvision's message opens with its C++ source location: not the user's
            reason = re.sub(r"^[^,]*, \S+:\d+, ", "", first_line(error))
            raise ValueError(f"{where}: cannot decode the image ({reason})") from None
        labels.append(index[cls])
    shapes = {tuple(img.shape) for img in images}
    if len(shapes) != 1:
        raise ValueError(f"{source}: images must share one size, found {sorted(shapes)[:3]}")
    result = ImageSet(torch.stack(images), torch.tensor(labels), classes)
    with _files.atomic_path(cached) as partial:
        _files.save_torch(result.__dict__, partial)
    return result


def _cache_key(source: Path, split: str, files: list[tuple[str, str]]) -> str:
    """What the decoded images depend on: the zip's size and modification time, or every
    listed image's name, size and modification time (a folder's own mtime changes only when
    an entry is added or removed directly in it, not when an image under it changes)."""
    stats = [source] if source.suffix == ".zip" else [source / name for _, name in files]
    listing = "\n".join(f"{p}:{st.st_size}:{st.st_mtime_ns}" for p in stats for st in [p.stat()])
    return hashlib.sha1(f"{source.resolve()}:{split}\n{listing}".encode()).hexdigest()[:16]


def _list_images(source: Path, split: str) -> list[tuple[str, str]]:
    if source.suffix == ".zip":
        with zipfile.ZipFile(source) as zf:
            names = [n for n in zf.namelist() if n.lower().endswith(IMAGE_SUFFIXES)]
    else:
        base = source / split if (source / split).is_dir() else source
        names = [
            str(p.relative_to(source))
            for p in sorted(base.rglob("*"))
            if p.suffix.lower() in IMAGE_SUFFIXES
        ]
    out = []
    for name in sorted(names):
        parts = Path(name).parts
        if parts[0] == split:
            parts = parts[1:]
        if len(parts) == 2:
            out.append((parts[0], name))
    return out


def _read(source: Path, files: list[tuple[str, str]]):
    """``(class, bytes, where)`` for each file, ``where`` naming it for a message."""
    if source.suffix == ".zip":
        with zipfile.ZipFile(source) as zf:
            for cls, name in files:
                try:
                    data = zf.read(name)
                except (zipfile.BadZipFile, zlib.error, EOFError) as error:
                    raise ValueError(
                        f"{source}: cannot read {name} in the zip ({first_line(error)})"
                    ) from None
                yield cls, data, f"{source}:{name}"
    else:
        for cls, name in files:
            yield cls, (source / name).read_bytes(), source / name


def _decode(data: bytes) -> Tensor:
    from torchvision.io import ImageReadMode, decode_image

    buffer = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return decode_image(buffer, mode=ImageReadMode.RGB)
