"""The names the ``cl2gnn node`` command offers, importable without torch (so that
``cl2gnn --help`` stays fast); the modules that implement them import them from here.
:data:`METHODS` lists the keys of :data:`cl2gnn.node.methods.REGISTRY`, in its order (a
test keeps the two equal)."""

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
    "bgrl",
    "cca_ssg",
    "graphacl",
    "gca",
    "mvgrl",
)
# cl2gnn node's --method: a registered method, or "auto" (chosen on the graph's own validation
# nodes among cl2gnn.node.config.CANDIDATES), the default
AUTO = "auto"
METHOD_CHOICES = (AUTO, *METHODS)
# grace: random 10/90, C by CV; gca: random 10/10/80; public: Planetoid's split;
# splits: the dataset's own shipped splits (C on their validation nodes)
PROTOCOLS = ("grace", "gca", "public", "splits")

ENCODERS = ("gcn", "sage", "gat")
ACTIVATIONS = ("relu", "prelu", "rrelu", "elu", "none")  # "none": a linear encoder
# what the probe reads: the last layer, both layers (jumping knowledge), or every layer with
# the input features, each unit-normalised
EMBEDDINGS = ("last", "concat", "layers")
# what GCA's adaptive views read a node's importance off
CENTRALITIES = ("degree", "pagerank", "eigenvector")
