"""The papers' configurations, and the candidates of method ``auto``, as data: each a
:class:`~cl2gnn.node.NodeConfig` whose ``options`` are its method's. Why each default is
what it is, with the measurements, is on the results page (``benchmarks/RESULTS.md``);
:func:`~cl2gnn.node.default_config` reads these.

Standard library only, as :mod:`cl2gnn.node.config`.
"""

from __future__ import annotations

from dataclasses import replace

from .config import NodeConfig


def _grace(lr, width, proj, activation, edges, features, tau, epochs) -> NodeConfig:
    """A configuration in the form GRACE publishes them."""
    return NodeConfig(
        learning_rate=lr,
        out_channels=width,
        activation=activation,
        drop_edge=edges,
        drop_feature=features,
        epochs=epochs,
        options={"proj_hidden": proj, "temperature": tau},
    )


# GRACE's published configurations for Planetoid, GCA's for Amazon, Coauthor and WikiCS
# (weight decay 1e-5 throughout, as both use); features raw, not row-normalised as their
# code does: the graphs on disk scored higher on their validation nodes with raw features
GRACE_PUBLISHED = {
    name: _grace(*values)
    for name, values in {
        # lr, out_channels, proj_hidden, activation, drop_edge, drop_feature, temperature, epochs
        "Cora": (5e-4, 128, 128, "relu", (0.2, 0.4), (0.3, 0.4), 0.4, 200),
        "CiteSeer": (1e-3, 256, 256, "prelu", (0.2, 0.0), (0.3, 0.2), 0.9, 200),
        "PubMed": (1e-3, 256, 256, "relu", (0.4, 0.1), (0.0, 0.2), 0.7, 1500),
        "Computers": (1e-2, 128, 128, "rrelu", (0.6, 0.3), (0.2, 0.3), 0.2, 2000),
        "Photo": (1e-1, 256, 64, "relu", (0.3, 0.5), (0.1, 0.1), 0.3, 2000),
        "CS": (5e-4, 256, 256, "rrelu", (0.3, 0.2), (0.3, 0.4), 0.4, 1000),
        "Physics": (1e-2, 128, 64, "rrelu", (0.4, 0.1), (0.1, 0.4), 0.5, 1500),
        "WikiCS": (1e-2, 256, 256, "prelu", (0.2, 0.3), (0.1, 0.1), 0.4, 3000),
        # the embedded default (a 1,797-node kNN graph): narrower and shorter
        "digits-knn": (1e-3, 64, 64, "relu", (0.2, 0.4), (0.2, 0.3), 0.5, 60),
    }.items()
}

# graphs without a published configuration, GRACE's family: GRACE's Cora configuration with
# the GraphSAGE encoder (ego and neighbor weights apart), every layer read out (the input
# included), raw features and 256 sampled uniformity keys (the former default)
GRACE_OTHER_GRAPHS = replace(
    GRACE_PUBLISHED["Cora"].with_overrides(num_keys=256), encoder="sage", embedding="layers"
)

# the field's methods as their authors' code runs them: each method's own configuration
# (BGRL's code has none for the citation graphs: its WikiCS one; CCA-SSG's and GraphACL's
# for Cora), and GraphACL's per graph for the heterophilous graphs of its paper
BGRL = NodeConfig(
    learning_rate=5e-4,
    out_channels=256,
    hidden_channels=512,
    activation="prelu",
    batch_norm=True,
    batch_norm_momentum=0.99,  # PyG's BatchNorm(momentum=0.99) is torch's: the batch's weight
    drop_edge=(0.2, 0.3),
    drop_feature=(0.2, 0.1),
    epochs=10_000,
    lr_warmup=1_000,
    lr_cosine=True,
    weight_decay=1e-5,
    normalize_features=True,
    options={"predictor_hidden": 512, "predictor_layers": 2, "ema_decay": 0.99, "ema_cosine": True},
)
CCA_SSG = NodeConfig(
    learning_rate=1e-3,
    out_channels=512,
    hidden_channels=512,
    out_activation=False,
    drop_edge=(0.4, 0.4),
    drop_feature=(0.1, 0.1),
    epochs=50,
    weight_decay=0.0,
    normalize_features=True,
    options={"decorrelation": 1e-3},
)
# graphs without a published configuration (the heterophilous graphs, any PATH.npz): one
# method and configuration, chosen among every method (the field's included) on every
# on-disk graph without one together, by mean validation rank (benchmarks/node_select.py,
# results/node_default_selection.json): CCA-SSG's configuration with the GraphSAGE encoder,
# every layer read out
OTHER_GRAPHS_METHOD = "cca_ssg"
OTHER_GRAPHS = replace(CCA_SSG, encoder="sage", embedding="layers")
GRAPHACL = NodeConfig(  # the heterophilous graphs' code: a linear encoder, sampled pairs
    learning_rate=1e-4,
    out_channels=4096,
    hidden_channels=4096,
    activation="none",
    self_loops=False,
    drop_edge=(0.0, 0.0),
    drop_feature=(0.0, 0.0),
    epochs=50,
    weight_decay=3e-4,
    normalize_features=True,
    options={
        "temperature": 0.5,
        "predictor_layers": 1,
        "ema_decay": 0.97,
        "samples_per_node": 5,
    },
)
# Graph Barlow Twins' code: its full-batch WikiCS configuration (none for the citation
# graphs; BGRL's choice too): GCN 512 → batch norm (momentum 0.01) → PReLU → GCN 256 (no
# batch norm after it: the encoder's batch norms stand before its activations), AdamW's
# weight decay here Adam's, the views' probabilities its hyper-parameter search's best for
# WikiCS
GBT = NodeConfig(
    learning_rate=5e-4,
    out_channels=256,
    hidden_channels=512,
    activation="prelu",
    batch_norm=True,
    batch_norm_momentum=0.01,
    out_activation=False,
    drop_edge=(0.2, 0.2),
    drop_feature=(0.1, 0.1),
    epochs=1000,
    lr_warmup=100,
    lr_cosine=True,
    weight_decay=1e-5,
    normalize_features=True,
)
# DGI's paper and code (execute.py; their Cora, CiteSeer and PubMed runs): one GCN layer,
# 512 wide, PReLU, row-normalised features, no augmentation but the corruption, up to
# 10,000 epochs, stopped once the training loss has not improved for 20 and the
# lowest-loss weights reloaded
DGI = NodeConfig(
    learning_rate=1e-3,
    out_channels=512,
    layers=1,
    activation="prelu",
    drop_edge=(0.0, 0.0),
    drop_feature=(0.0, 0.0),
    epochs=10_000,
    patience=20,
    weight_decay=0.0,
    normalize_features=True,
)
# MVGRL's Cora code (node/train.py, utils.py): DGI's encoder, optimiser and stopping rule
# (one GCN layer per view, 512 wide, PReLU, no weight decay, row-normalised features; up to
# 3,000 epochs, patience 20), the exact dense diffusion (the method's default,
# diffusion_k=None) and its steps on 4 windows of 2,000 consecutive node ids (the method's
# defaults, window_size and windows)
MVGRL = replace(DGI, epochs=3_000)
# PolyGCL's code (ChenJY-Count/PolyGCL): the filters (K = 10) on the row-normalised features,
# one shared Linear(F, 512) and ReLU (the built-in encoder with one layer, on each node
# alone), the filters, alpha and beta at their lr, the linear layer and the discriminator at
# lr1 = 1e-3, dropout the only augmentation; their defaults, 500 epochs, their maximum (their
# code stops on the training loss, patience 20: benchmarks/reproduce/polygcl.py)
POLYGCL = NodeConfig(
    learning_rate=1e-3,
    out_channels=512,
    layers=1,
    activation="relu",
    drop_edge=(0.0, 0.0),
    drop_feature=(0.0, 0.0),
    epochs=500,
    weight_decay=0.0,
    normalize_features=True,
    options={
        "filter_degree": 10,
        "filter_lr": 0.01,
        "input_dropout": 0.5,
        "filter_dropout": 0.5,
        "filter_batch_norm": False,
    },
)
METHOD_DEFAULTS = {
    "bgrl": BGRL,
    "cca_ssg": CCA_SSG,
    "graphacl": GRAPHACL,
    "gbt": GBT,
    "dgi": DGI,
    "mvgrl": MVGRL,
    "polygcl": POLYGCL,
}
# GCA's code (train.py, pGRACE/dataset.py) row-normalises the features on every graph and
# weighs a feature column by where it is non-zero, except on WikiCS (by its magnitude). Not
# its NaN: where a column is zero on every node (Cora has one) its code masks every column
# at the cut-off; the default masks that column alone (zero_columns, measured in
# benchmarks.decisions.gca_zero_columns)
GCA_PUBLISHED = {
    ("gca", name): replace(config, normalize_features=True).with_overrides(
        binary_features=name != "WikiCS"
    )
    for name, config in GRACE_PUBLISHED.items()
    if name != "digits-knn"
}
AUTHORS_PER_GRAPH = {
    **GCA_PUBLISHED,
    # the library's, not the authors' (BGRL publishes no Cora configuration; the anchor,
    # 82.7, is GraphMAE's reproduction): 512 wide, GRACE's Cora views, 300 epochs
    ("bgrl", "Cora"): replace(
        BGRL,
        out_channels=512,
        drop_edge=(0.2, 0.4),
        drop_feature=(0.3, 0.4),
        epochs=300,
        lr_warmup=30,
    ),
    ("graphacl", "Cora"): replace(  # the authors' Cora code: every neighbor, every node
        GRAPHACL,
        learning_rate=5e-4,
        out_channels=2048,
        hidden_channels=2048,
        activation="relu",
        out_activation=False,
        self_loops=True,
        weight_decay=1e-6,
    ).with_overrides(samples_per_node=None, temperature=1.0, ema_decay=0.97),
    ("graphacl", "actor"): GRAPHACL.with_overrides(
        temperature=1.0, ema_decay=0.95, predictor_layers=2, predictor_hidden=4096
    ),
    ("graphacl", "texas"): GRAPHACL.with_overrides(
        out_channels=2048, hidden_channels=2048, temperature=0.75, ema_decay=0.95
    ),
    ("graphacl", "wisconsin"): GRAPHACL.with_overrides(temperature=0.5, ema_decay=0.97),
    ("graphacl", "cornell"): GRAPHACL.with_overrides(temperature=0.5, ema_decay=0.95),
    # PolyGCL's scripts (exp_PolyGCL.sh, HeterophilousGraph/exp_PolyGCL.sh): their filters'
    # lr, dropout before (dprate) and after the filters, and where they set it the batch
    # norm of the filtered features with PReLU; chameleon 1,000 epochs
    **{
        ("polygcl", name): replace(
            POLYGCL,
            activation="prelu" if norm else "relu",
            epochs=1000 if name == "chameleon" else 500,
        ).with_overrides(
            filter_lr=lr, input_dropout=dprate, filter_dropout=dropout, filter_batch_norm=norm
        )
        for name, (lr, dprate, dropout, norm) in {
            "minesweeper": (1e-4, 0.4, 0.1, False),
            "texas": (5e-3, 0.4, 0.5, False),
            "cornell": (1e-4, 0.8, 0.5, False),
            "wisconsin": (1e-4, 0.1, 0.7, True),
            "actor": (1e-2, 0.3, 0.7, True),
            "chameleon": (1e-3, 0.3, 0.2, True),
        }.items()
    },
    ("graphacl", "chameleon"): GRAPHACL.with_overrides(
        epochs=30, temperature=0.5, ema_decay=0.999, normalize_features=False
    ),
}

# what cl2gnn node without --method (method "auto") chooses among, on each graph's own
# validation nodes (cl2gnn.node.evaluation.auto): the graph's published configuration where
# it has one, then these, in the order of their mean validation rank on every on-disk graph
# without one (results/node_default_selection.json): CCA-SSG with the GraphSAGE encoder and
# every layer read out, GRACE's alike with 256 sampled keys (the best on
# chameleon-filtered), and GraphACL with its authors' configuration for the wiki graphs
# (chameleon), 512 wide (the best on chameleon by 11 points; against 1,024 wide, -0.45
# validation points on average over seven graphs, -0.83 on chameleon, the only one where it
# wins, at half the time or less: results/node_auto_graphacl_width.json)
CANDIDATES: tuple[tuple[str, str, NodeConfig], ...] = (
    ("cca_ssg sage layers", "cca_ssg", OTHER_GRAPHS),
    ("grace sage layers", "grace", GRACE_OTHER_GRAPHS),
    (
        "graphacl wiki 512",
        "graphacl",
        AUTHORS_PER_GRAPH["graphacl", "chameleon"].with_overrides(
            out_channels=512, hidden_channels=512
        ),
    ),
)


def graph_name(graph) -> str | None:
    """The name a graph's configuration is chosen by: ``graph`` where it is a string, else
    ``None``. A ``Data``'s attributes are not read: the same graph, however it was loaded,
    gets the same configuration."""
    return graph if isinstance(graph, str) else None


def candidates(graph: str | None = None) -> list[tuple[str, str, NodeConfig]]:
    """``(label, method, configuration)`` of each candidate of method ``"auto"`` on the
    graph named ``graph`` (``None``: a graph without a name): that graph's published
    configuration first where it has one, then :data:`CANDIDATES`."""
    name = graph_name(graph)
    published = (
        [(f"grace ({name}'s published)", "grace", GRACE_PUBLISHED[name])]
        if name in GRACE_PUBLISHED
        else []
    )
    return published + list(CANDIDATES)
