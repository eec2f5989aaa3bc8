"""The names the ``cl2gnn`` command offers (its choices and its ``--help``), without torch:
each is the library's own, repeated here so that the command answers ``--help`` and an
argument error before torch loads, and tied to its source by a test
(``tests/cli/test_catalogue.py``: every name here equals the library's)."""

from __future__ import annotations

# cl2gnn.datasets: the graphs cl2gnn reads, and the generated graphs' presets
EMBEDDED_DATASET = "digits-knn"
PYG_DATASETS = ("Cora", "CiteSeer", "PubMed", "Computers", "Photo", "CS", "Physics", "WikiCS")
HETEROPHILOUS = (
    "actor",
    "chameleon",
    "chameleon-filtered",
    "cornell",
    "texas",
    "wisconsin",
    "minesweeper",
)
DATASETS = (EMBEDDED_DATASET, *PYG_DATASETS, *HETEROPHILOUS)


def dataset_name(text: str) -> str:
    """The dataset ``text`` names, as :data:`DATASETS` spells it (case-insensitive, ``_`` for
    ``-``); ``text`` itself where it names none (a ``.npz`` path)."""
    return {name.lower(): name for name in DATASETS}.get(text.lower().replace("_", "-"), text)


GRAPH_PRESETS = ("arxiv", "products")
# cl2gnn.graphs: the kNN tiles' precisions
KNN_TILE_PRECISIONS = ("full", "tf32", "bf16")
# cl2gnn.node: the configuration's choices (its own module is torch-free), the protocols,
# method auto
from cl2gnn.node.config import EMBEDDINGS as EMBEDDINGS  # noqa: E402
from cl2gnn.node.config import ENCODERS as ENCODERS  # noqa: E402

PROTOCOLS = ("grace", "gca", "public", "splits")
AUTO = "auto"
MATMUL_DTYPES = ("bfloat16",)
# cl2gnn.vision: the image commands' choices
IMAGE_DATASETS = ("digits", "cifar10", "cifar100", "folder")
ARCHS = ("resnet18", "resnet50", "convnet")
KERNELS = ("laplacian", "exp0.5", "sum", "concat")
# cl2gnn.studies: the simulator's studies
STUDY_NAMES = (
    "message-passing",
    "proposition2",
    "proposition3",
    "spectral-clustering",
    "neural-kernel",
    "new-designs",
    "oversmoothing",
)
