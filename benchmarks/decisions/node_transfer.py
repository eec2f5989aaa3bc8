"""Do the defaults carry to graphs they were not tuned on? Cora's configuration (GRACE's
published one, what ``cl2gnn node`` uses for any dataset without its own entry) trains
each method, unchanged, on graphs that need no download:

* ``digits-knn``: the embedded default (scikit-learn's digits, cosine 10-NN graph);
* ``breast-cancer-knn``: scikit-learn's breast-cancer table (569 rows, 30 standardised
  features, 2 classes), Euclidean 10-NN graph;
* ``csbm-h<h>``: contextual stochastic block models (5 classes × 400 nodes, 32 Gaussian
  features around a mean per class, average degree 6) whose edges stay inside a class
  with probability ``h`` — from a homophilous graph to one whose edges mostly join
  classes.

Beside each method, two baselines on the same splits: logistic regression on the raw
features, and the same encoder left at its random initialisation (DGI's observation that
a random GCN is already a strong embedding). GRACE protocol (10 % train, C by 5-fold CV),
accuracy in percent, mean ± std over seeds 0 … n−1.

    python -m benchmarks.decisions.node_transfer --methods grace neighbors --seeds 5

One JSON line per (dataset, embedding) is appended to ``--out``; the table is printed and
the contextual SBMs' accuracy against homophily is plotted to ``--plot``. ``--report
JSONL`` rebuilds both from such a file. The options are checked before torch loads
(``prog: error: ...``, exit 2, nothing written); the plot appears only complete.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benchmarks._shared import node_args
from cl2gnn import _files
from cl2gnn.cli import cmdline

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Data

    from cl2gnn.node import NodeConfig

# the file types matplotlib's savefig writes (it goes by the suffix)
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff")
RECORD_KEYS = ("dataset", "nodes", "embedding", "accuracy_mean", "accuracy_std")


def plot_file(text: str) -> str:
    """An argparse type: a file :func:`report` can plot into (its suffix names the format)."""
    if Path(text).suffix.lower() not in PLOT_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"must end in one of {', '.join(PLOT_SUFFIXES)} (the image format), got {text!r}"
        )
    return cmdline.output_file(text)


def breast_cancer_knn() -> Data:
    import torch
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from cl2gnn.datasets.nodes import feature_knn_dataset

    table = load_breast_cancer()
    x = torch.tensor(StandardScaler().fit_transform(table.data), dtype=torch.float32)
    return feature_knn_dataset(x, torch.tensor(table.target), "breast-cancer-knn", metric="l2")


def planted_partition(homophily: float, classes: int = 5, per_class: int = 400) -> Data:
    """A contextual stochastic block model: an SBM graph of average degree 6 whose edges
    stay inside a class with probability ``homophily``, and Gaussian features around a
    random mean per class (noisy enough that the graph matters)."""
    import torch
    from torch_geometric.data import Data

    from cl2gnn.datasets import sbm_graph

    n = classes * per_class
    p = 6.0 * homophily / (per_class - 1)
    q = 6.0 * (1 - homophily) / (n - per_class)
    edge_index, y = sbm_graph([per_class] * classes, p, q, seed=0)
    generator = torch.Generator().manual_seed(0)
    means = 0.25 * torch.randn(classes, 32, generator=generator)
    x = means[y] + torch.randn(n, 32, generator=generator)
    data = Data(x=x, edge_index=edge_index, y=y)
    data.name = f"csbm-h{homophily}"
    return data


def random_encoder(data: Data, config: NodeConfig, seed: int) -> torch.Tensor:
    import torch
    from torch_geometric import seed_everything

    from cl2gnn.node.encoders.graph_encoder import GraphEncoder

    seed_everything(seed)
    encoder = GraphEncoder(data.num_features, config.out_channels, config.activation).eval()
    with torch.no_grad():
        return encoder(data.x, data.edge_index)  # its last layer, called as PyG's models are


def evaluate(data: Data, methods: list[str], seeds: int) -> list[dict]:
    """One record per embedding (the two baselines, then each method) on ``data``."""
    from cl2gnn.node import NodeConfig, make_split, probe_score, train_node_model

    config = NodeConfig()  # Cora's (GRACE's) configuration, untouched
    scores: dict[str, list[float]] = {}
    epoch_ms: dict[str, float] = {}
    for seed in range(seeds):
        split = make_split("grace", data, seed)
        embeddings = {"raw features": data.x, "random encoder": random_encoder(data, config, seed)}
        for method in methods:
            result = train_node_model(data, method, config, seed=seed, progress=False)
            embeddings[method], epoch_ms[method] = result.embeddings, result.epoch_ms
        for name, feats in embeddings.items():
            scores.setdefault(name, []).append(probe_score(feats, data.y, split, seed))
    return [
        {
            "dataset": data.name,
            "nodes": data.num_nodes,
            "embedding": name,
            "seeds": seeds,
            "accuracy_mean": round(float(np.mean(acc)), 2),
            "accuracy_std": round(float(np.std(acc)), 2),
            "epoch_ms": round(epoch_ms[name], 1) if name in epoch_ms else None,
        }
        for name, acc in scores.items()
    ]


def report(rows: list[dict], plot: str) -> None:
    """The Markdown table of ``rows`` and the contextual SBMs' accuracy against ``h``."""
    names = list(dict.fromkeys(r["embedding"] for r in rows))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    cell = {(r["dataset"], r["embedding"]): r for r in rows}
    print("| dataset | nodes | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for dataset in datasets:
        text = [
            f"{cell[dataset, n]['accuracy_mean']:.2f} ± {cell[dataset, n]['accuracy_std']:.2f}"
            for n in names
        ]
        print(f"| {dataset} | {cell[dataset, names[0]]['nodes']} | " + " | ".join(text) + " |")
    sbms = [d for d in datasets if d.startswith("csbm-h")]
    if not sbms:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    homophily = [float(d.removeprefix("csbm-h")) for d in sbms]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name in names:
        cells = [cell[d, name] for d in sbms]
        means = [c["accuracy_mean"] for c in cells]
        stds = [c["accuracy_std"] for c in cells]
        ax.errorbar(homophily, means, stds, marker="o", capsize=3, label=name)
    ax.set(xlabel="edge homophily h", ylabel="accuracy (%), GRACE protocol")
    ax.set_title("Cora's defaults on contextual SBMs")
    ax.legend()
    fig.tight_layout()
    with _files.atomic_path(plot) as partial:  # the same suffix: savefig's format
        fig.savefig(partial, dpi=120)
    plt.close(fig)
    print(f"\nplot: {plot}")


def main() -> None:
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=["grace", "neighbors"])
    parser.add_argument("--seeds", type=cmdline.positive_int, default=5)
    parser.add_argument(
        "--homophily",
        type=cmdline.probability,
        nargs="+",
        default=[0.9, 0.7, 0.5, 0.3],
        help="the contextual SBMs' share of edges inside a class",
    )
    parser.add_argument("--out", type=cmdline.output_file, default="runs/node_transfer.jsonl")
    parser.add_argument("--plot", type=plot_file, default="runs/node_transfer.png")
    parser.add_argument(
        "--report", type=cmdline.existing_path, metavar="JSONL", help="only rebuild table and plot"
    )
    args = parser.parse_args()
    node_args.check_method_names(parser, "--methods", args.methods)
    with cmdline.user_errors(parser.prog):
        if args.report:
            report(node_args.read_jsonl(args.report, RECORD_KEYS), args.plot)
            return
        run(args)


def run(args) -> None:
    from cl2gnn.datasets import load_node_dataset

    warnings.filterwarnings("ignore")  # the probes' convergence notices, run after run
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    datasets = [load_node_dataset("digits-knn"), breast_cancer_knn()]
    datasets += [planted_partition(h) for h in args.homophily]
    rows = []
    for data in datasets:
        for record in evaluate(data, args.methods, args.seeds):
            print(json.dumps(record), flush=True)
            with open(args.out, "a") as out:
                out.write(json.dumps(record) + "\n")
            rows.append(record)
    print()
    report(rows, args.plot)


if __name__ == "__main__":
    main()
