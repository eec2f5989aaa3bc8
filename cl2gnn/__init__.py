"""cl2gnn: contrastive learning as message passing on PyTorch Geometric.

The library: :mod:`cl2gnn.nn` (the operators), :mod:`cl2gnn.losses` (objectives composed from
them), :mod:`cl2gnn.distributed` (their negatives across processes), :mod:`cl2gnn.graphs`
(augmentation-graph builders, neighbor sampling), :mod:`cl2gnn.datasets` (real and
generated graphs), :mod:`cl2gnn.node` (node-level methods and trainers) and
:mod:`cl2gnn.vision` (image self-supervised learning). The applications built on it (the
``cl2gnn`` command, the experiment harnesses, the dynamics studies) live in
:mod:`cl2gnn.cli`, which the library never imports.

The subpackages load on first use (PEP 562): ``import cl2gnn`` costs nothing, so that the
``cl2gnn`` command answers ``--help`` and argument errors without importing torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:  # the exports, read by lazy_exports
    from . import datasets, distributed, graphs, losses, nn, node, vision
    from ._validation import set_validation

__getattr__, __dir__, _lazy_names = lazy_exports(__name__, globals())
__all__ = ["__version__", *_lazy_names]
