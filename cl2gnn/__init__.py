"""cl2gnn: contrastive learning as message passing on PyTorch Geometric.

The library: :mod:`cl2gnn.nn` (the operators), :mod:`cl2gnn.losses` (objectives composed from
them), :mod:`cl2gnn.distributed` (their negatives across processes), :mod:`cl2gnn.graphs`
(augmentation-graph builders, neighbor sampling), :mod:`cl2gnn.datasets` (real and
generated graphs), :mod:`cl2gnn.node` (node-level methods and trainers),
:mod:`cl2gnn.vision` (image self-supervised learning) and :mod:`cl2gnn.studies` (the
simulator of the learning dynamics). The ``cl2gnn`` command (:mod:`cl2gnn.cli`) is built on
it; the library never imports it.

The subpackages load on first use (PEP 562): ``import cl2gnn`` costs nothing, so that the
``cl2gnn`` command answers ``--help`` and argument errors without importing torch.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"
SUBPACKAGES = ("datasets", "distributed", "graphs", "losses", "nn", "node", "studies", "vision")
__all__ = ["__version__", *SUBPACKAGES, "set_validation"]


def __getattr__(name: str):
    if name in SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    if name == "set_validation":
        return importlib.import_module("._validation", __name__).set_validation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
