"""Training length chosen on validation nodes: each configuration of a JSON list (as for
``node_sweep.py``) is trained for ``seeds`` seeds with its embeddings kept every ``--every``
epochs; each snapshot is probed on the public split (validation and test accuracy) and
under the GRACE protocol. The epoch with the best validation accuracy, averaged over the
seeds, is chosen without looking at the test nodes, and its test accuracy reported.

    python benchmarks/node_epochs.py benchmarks/configs/cora_epochs.json --seeds 3 --every 25

Prints a Markdown table per configuration (accuracy in percent, mean ± std over seeds
0 … n−1) and appends one JSON line per configuration to ``--out``; ``--report PATH``
prints the tables of such a file again without training.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
from node_sweep import parse_entry  # benchmarks/node_sweep.py

from cl2gnn.node import (
    default_config,
    load_node_dataset,
    make_split,
    probe_accuracy,
    probe_scores,
    train_node_model,
)


def snapshot_scores(data, method: str, config, seeds: int, every: int) -> dict:
    """``{epoch: {"validation": [...], "public": [...], "grace": [...]}}``, one value per seed."""
    public = make_split("public", data, 0)
    curves: dict[int, dict[str, list[float]]] = {}
    for seed in range(seeds):
        result = train_node_model(data, method, config, seed, progress=True, snapshot_every=every)
        grace_split = make_split("grace", data, seed)
        for epoch, embeddings in result.snapshots.items():
            scores = probe_scores(embeddings, data.y, public, seed)
            grace = probe_accuracy(embeddings, data.y, grace_split, seed)
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "configs", nargs="?", help="JSON list of {method, <NodeConfig field>: value}"
    )
    parser.add_argument("--dataset", default="Cora")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--out", default="runs/node_epochs.jsonl")
    parser.add_argument("--report", help="print the tables of a saved --out file and stop")
    args = parser.parse_args()
    if args.report:
        for line in Path(args.report).read_text().splitlines():
            record = json.loads(line)
            entry = {k: v for k, v in record.items() if k not in ("seeds", "curves")}
            report(entry, record["seeds"], record["curves"])
        return
    warnings.filterwarnings("ignore")
    data = load_node_dataset(args.dataset)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for entry in json.loads(Path(args.configs).read_text()):
        method, overrides = parse_entry(entry)
        config = default_config(data.name).with_overrides(**overrides)
        curves = snapshot_scores(data, method, config, args.seeds, args.every)
        report(entry, args.seeds, curves)
        record = {**entry, "seeds": args.seeds, "curves": curves}
        with open(args.out, "a") as out:
            out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
