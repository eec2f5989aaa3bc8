"""The names the ``cl2gnn node`` command offers, importable without torch (so that
``cl2gnn --help`` stays fast); the modules that implement them import them from here."""

from __future__ import annotations

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
