"""Read-outs and probes compared on the same frozen embeddings: each method is trained once
per seed (both GCN layers kept, ``--embedding concat``), then probed as the last layer, both
layers, and both layers multiplied ``k`` more times by GCN's normalised adjacency ``Â``
(GRACE protocol and public split); and, on the public split, with other feature scalings,
a finer ``C`` grid, and the Adam-trained probe behind CCA-SSG's and GraphMAE's numbers.

    python -m benchmarks.studies.node_readout --methods grace neighbors --out-channels 256 --seeds 3

Accuracy in percent, mean ± std over seeds 0 … n−1, printed as two Markdown tables. The
options are checked before torch loads (``prog: error: ...``, exit 2), the dataset's public
split before the first training.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from benchmarks._shared import node_args
from cl2gnn.cli import cmdline, node_arguments

if TYPE_CHECKING:
    import torch

FINE_GRID = 2.0 ** np.arange(-8, 13, 1)


def probes() -> dict:
    """name -> (embeddings, y, split, seed) -> test accuracy; the first is the default."""
    from cl2gnn.node import adam_probe_scores, probe_score
    from cl2gnn.node.evaluation.probes import C_GRID

    return {
        "L2, coarse (library)": lambda *a: probe_score(*a, scaling="l2", c_grid=C_GRID),
        "L2, fine": lambda *a: probe_score(*a, scaling="l2", c_grid=FINE_GRID),
        "standardised, fine": lambda *a: probe_score(*a, scaling="standard", c_grid=FINE_GRID),
        "raw, fine": lambda *a: probe_score(*a, scaling="none", c_grid=FINE_GRID),
        "raw, Adam": lambda *a: adam_probe_scores(*a)["test"],
    }


def readouts(
    embedding: torch.Tensor, out_channels: int, adj: torch.Tensor, hops: list[int]
) -> dict:
    from torch_geometric.utils import spmm

    out = {"last layer": embedding[:, -out_channels:], "concat": embedding}  # the last layer last
    for k in range(1, max(hops, default=0) + 1):
        embedding = spmm(adj, embedding)
        if k in hops:
            out[f"concat, Â^{k}"] = embedding
    return out


def mean_std(values: list[float]) -> str:
    return f"{np.mean(values):.2f} ± {np.std(values):.2f}"


def main() -> None:
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset",
        type=node_arguments.dataset_argument,
        default="Cora",
        help="with a public split",
    )
    parser.add_argument("--methods", nargs="+", default=["grace", "neighbors"])
    parser.add_argument(
        "--out-channels",
        type=cmdline.positive_int,
        default=256,
        help="the encoder's last layer's width, and the projection head's",
    )
    parser.add_argument("--epochs", type=cmdline.positive_int, help="default: the dataset's")
    parser.add_argument("--seeds", type=cmdline.positive_int, default=3)
    parser.add_argument(
        "--hops", type=cmdline.positive_int, nargs="*", default=[1, 2, 4, 8], help="powers of Â"
    )
    args = parser.parse_args()
    node_args.check_method_names(parser, "--methods", args.methods)
    with cmdline.user_errors(parser.prog):
        run(args)


def run(args) -> None:
    from torch_geometric.nn.conv.gcn_conv import gcn_norm
    from torch_geometric.utils import to_torch_csr_tensor

    from cl2gnn.node import (
        default_config,
        load_node_dataset,
        make_split,
        probe_score,
        train_node_model,
    )

    warnings.filterwarnings("ignore")  # the probes' convergence notices, run after run
    data = load_node_dataset(args.dataset)
    make_split("public", data, 0)  # a dataset without one fails here, before any training
    probe_fns = probes()
    config = default_config(data.name).with_overrides(
        out_channels=args.out_channels,
        proj_hidden=args.out_channels,
        embedding="concat",
        epochs=args.epochs,
    )
    edge_index, weight = gcn_norm(data.edge_index, None, data.num_nodes, add_self_loops=True)
    adj = to_torch_csr_tensor(edge_index.flip(0), weight, size=(data.num_nodes,) * 2)
    read, probe = {}, {}
    for method in args.methods:
        for seed in range(args.seeds):
            embedding = train_node_model(data, method, config, seed=seed, progress=False).embeddings
            for name, feats in readouts(embedding, config.out_channels, adj, args.hops).items():
                for protocol in ("grace", "public"):
                    split = make_split(protocol, data, seed)
                    accuracy = probe_score(feats, data.y, split, seed)
                    read.setdefault((method, name, protocol), []).append(accuracy)
                if name not in ("last layer", "concat"):
                    continue
                split = make_split("public", data, seed)
                for probe_name, run_probe in probe_fns.items():
                    accuracy = run_probe(feats, data.y, split, seed)
                    probe.setdefault((method, name, probe_name), []).append(accuracy)
    print("| method | read-out | GRACE protocol | public split |\n|---|---|---|---|")
    for method, name, _ in list(read)[::2]:
        cells = [mean_std(read[(method, name, p)]) for p in ("grace", "public")]
        print(f"| {method} | {name} | {' | '.join(cells)} |")
    print("\n| method | embedding | " + " | ".join(probe_fns) + " |")
    print("|---|---|" + "---|" * len(probe_fns))
    for method in args.methods:
        for name in ("concat", "last layer"):
            cells = [mean_std(probe[(method, name, p)]) for p in probe_fns]
            print(f"| {method} | {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
