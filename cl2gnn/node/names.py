"""The names the ``cl2gnn node`` command offers, importable without torch (so that
``cl2gnn --help`` stays fast); the modules that implement them import them from here."""

from __future__ import annotations

import argparse
from pathlib import Path

EMBEDDED = "digits-knn"  # scikit-learn's digits as a kNN graph: needs no download
# PyG's homophilous benchmark graphs (Planetoid, Amazon, Coauthor, WikiCS)
PYG_DATASETS = ("Cora", "CiteSeer", "PubMed", "Computers", "Photo", "CS", "Physics", "WikiCS")
# heterophilous graphs in Platonov et al.'s .npz format, with their 10 standard splits
HETEROPHILOUS = (
    "actor",
    "chameleon",
    "chameleon-filtered",
    "cornell",
    "texas",
    "wisconsin",
    "minesweeper",
)
DATASETS = (EMBEDDED, *PYG_DATASETS, *HETEROPHILOUS)

METHODS = (
    "grace",
    "attention",
    "multistage",
    "kernel",
    "random_walk",
    "spectral",
    "knn",
    "neighbors",
    "homophily",
)
# the InfoNCE-based methods, which take num_keys
SAMPLED_KEYS_METHODS = ("grace", "neighbors", "homophily", "multistage", "knn")
# the methods without per-node state (a memory bank, the input graph's edges as positives):
# they take a batch of any size, so they train in mini-batches
BATCH_METHODS = ("grace", "attention", "kernel", "random_walk", "spectral", "knn")
# the methods whose negatives span the ranks of a process group (cl2gnn.distributed)
DISTRIBUTED_METHODS = ("grace", "attention", "kernel", "random_walk", "spectral")

# grace: random 10/90, C by CV; gca: random 10/10/80; public: Planetoid's split;
# splits: the dataset's own shipped splits (C on their validation nodes)
PROTOCOLS = ("grace", "gca", "public", "splits")

ENCODERS = ("gcn", "sage", "gat")
# what the probe reads: the last layer, both layers (jumping knowledge), or every layer with
# the input features, each unit-normalised
EMBEDDINGS = ("last", "concat", "layers")


def dataset_argument(text: str) -> str:
    """An argparse type for ``--dataset``: a name above (case-insensitive, ``_`` for ``-``)
    or the path of an existing ``.npz`` graph, checked before torch loads."""
    if text.endswith(".npz"):
        if not Path(text).expanduser().is_file():
            raise argparse.ArgumentTypeError(f"no such file: {text!r}")
        return text
    if text.lower().replace("_", "-") not in {name.lower() for name in DATASETS}:
        raise argparse.ArgumentTypeError(
            f"unknown dataset {text!r}; choose from {', '.join(DATASETS)} or give a PATH.npz"
        )
    return text
