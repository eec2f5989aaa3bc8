"""The datasets cl2gnn reads and the graphs it generates, by name, importable without torch
(so that ``cl2gnn --help`` and an argument error answer at once)."""

from __future__ import annotations

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

# the sizes of the OGB graphs (undirected edges) and their edge homophily, rounded
PRESETS: dict[str, dict[str, float]] = {
    "arxiv": dict(
        num_nodes=169_343, num_edges=1_166_243, num_features=128, num_classes=40, homophily=0.65
    ),
    "products": dict(
        num_nodes=2_449_029, num_edges=61_859_140, num_features=100, num_classes=47, homophily=0.8
    ),
}
