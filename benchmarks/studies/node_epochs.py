"""Training length chosen on validation nodes: each configuration of a JSON list (as for
``node_sweep.py``) is trained for ``seeds`` seeds with its embeddings kept every ``--every``
epochs; each snapshot is probed on the public split (validation and test accuracy) and
under the GRACE protocol. The epoch with the best validation accuracy, averaged over the
seeds, is chosen without looking at the test nodes, and its test accuracy reported.

    python -m benchmarks.studies.node_epochs benchmarks/configs/cora_epochs.json \
        --seeds 3 --every 25

Prints a Markdown table per configuration (accuracy in percent, mean ± std over seeds
0 … n−1) and appends one JSON line per configuration to ``--out``; ``--report PATH``
prints the tables of such a file again without training. The options and every entry of
the list are checked before torch loads (``prog: error: ...`` naming the file and entry,
exit 2, nothing written), the dataset's public split before the first training.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from benchmarks._shared import node_args
from benchmarks.studies.node_sweep import parse_entry
from cl2gnn.cli import cmdline, node_arguments


def snapshot_scores(data, method: str, config, seeds: int, every: int) -> dict:
    """``{epoch: {"validation": [...], "public": [...], "grace": [...]}}``, one value per seed."""
    from cl2gnn.node import make_split, probe_score, probe_scores, train_node_model

    public = make_split("public", data, 0)
    curves: dict[int, dict[str, list[float]]] = {}
    for seed in range(seeds):
        result = train_node_model(
            data, method, config, seed=seed, progress=True, snapshot_every=every
        )
        grace_split = make_split("grace", data, seed)
        for epoch, embeddings in result.snapshots.items():
            scores = probe_scores(embeddings, data.y, public, seed)
            grace = probe_score(embeddings, data.y, grace_split, seed)
            curve = curves.setdefault(epoch, {"validation": [], "public": [], "grace": []})
            curve["validation"].append(scores["validation"])
            curve["public"].append(scores["test"])
            curve["grace"].append(grace)
    return curves


def mean_std(values: list[float]) -> str:
    return f"{np.mean(values):.2f} ± {np.std(values):.2f}"


def chosen_epoch(curves: dict) -> int:
    """The best mean validation accuracy (to 0.01 %); ties go to the shorter training."""
    return max(curves, key=lambda e: (round(float(np.mean(curves[e]["validation"])), 2), -int(e)))


def report(entry: dict, seeds: int, curves: dict) -> None:
    chosen = chosen_epoch(curves)
    print(f"\n{json.dumps(entry)}, {seeds} seeds; chosen on validation: epoch {chosen}")
    print("| epoch | public validation | public test | GRACE protocol |\n|---|---|---|---|")
    for epoch, curve in curves.items():
        cells = [mean_std(curve[key]) for key in ("validation", "public", "grace")]
        row = f"| {epoch}{' (chosen)' if epoch == chosen else ''} | {' | '.join(cells)} |"
        print(row, flush=True)


def main() -> None:
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "configs",
        nargs="?",
        type=node_args.config_list,
        help="JSON list of {method, <NodeConfig field>: value}",
    )
    parser.add_argument(
        "--dataset",
        type=node_arguments.dataset_argument,
        default="Cora",
        help="with a public split",
    )
    parser.add_argument("--seeds", type=cmdline.positive_int, default=3)
    parser.add_argument("--every", type=cmdline.positive_int, default=25, help="epochs")
    parser.add_argument("--out", type=cmdline.output_file, default="runs/node_epochs.jsonl")
    parser.add_argument(
        "--report",
        type=cmdline.existing_path,
        metavar="JSONL",
        help="print the tables of a saved --out file and stop",
    )
    args = parser.parse_args()
    if (args.configs is None) == (args.report is None):
        parser.error("give either a configs file or --report JSONL")
    if args.configs is not None:
        node_args.check_methods(parser, args.configs)
    with cmdline.user_errors(parser.prog):
        if args.report:
            for record in node_args.read_jsonl(args.report, ("method", "seeds", "curves")):
                entry = {k: v for k, v in record.items() if k not in ("seeds", "curves")}
                report(entry, record["seeds"], record["curves"])
            return
        run(args)


def run(args) -> None:
    from cl2gnn.node import default_config, load_node_dataset, make_split

    warnings.filterwarnings("ignore")  # the probes' convergence notices, run after run
    data = load_node_dataset(args.dataset)
    make_split("public", data, 0)  # a dataset without one fails here, before any training
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for entry in args.configs:
        method, overrides = parse_entry(entry)
        config = default_config(data.name).with_overrides(**overrides)
        curves = snapshot_scores(data, method, config, args.seeds, args.every)
        report(entry, args.seeds, curves)
        record = {**entry, "seeds": args.seeds, "curves": curves}
        with open(args.out, "a") as out:
            out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
