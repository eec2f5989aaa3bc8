"""Choosing one default for graphs without a published configuration, on every on-disk
heterophilous graph together.

Each candidate of a JSON file (a method plus :class:`~cl2gnn.node.NodeConfig` overrides,
over the file's ``common`` overrides; ``"epochs": 0`` is that encoder untrained) trains on
the first ``--splits`` shipped splits of every graph (seed = split index) and is probed as
the ``splits`` protocol does (logistic regression, ``C`` chosen on the validation nodes).
Both the validation and the test score of each split are recorded; candidates are ranked
by their **validation** scores, so that the test nodes take no part in the choice.

    python benchmarks/node_select.py benchmarks/configs/heterophilous_candidates.json \\
        --splits 3 --out runs/node_select.jsonl --max-minutes 9   # repeat until done
    python benchmarks/node_select.py benchmarks/configs/heterophilous_candidates.json \\
        --splits 3 --out runs/node_select.jsonl --table           # -> results/node_selection.json

One JSON line per (candidate, graph) is appended to ``--out``; a run skips the pairs already
there and stops starting new ones after ``--max-minutes``, so the sweep runs in chunks.
The first rows of the table are the raw-feature probes (computed here, no training).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
from _results import save_table  # benchmarks/_results.py

from cl2gnn.node import NodeConfig, load_node_dataset, make_split, probe_scores
from cl2gnn.node.evaluate import metric_for
from cl2gnn.node.names import HETEROPHILOUS
from cl2gnn.node.train import train_node_model

RAW = {"raw features": "l2", "raw features, standardised": "standard"}


def on_disk_graphs() -> list[str]:
    root = Path(os.environ.get("CL2GNN_DATA", "")) / "heterophilous"
    return [name for name in HETEROPHILOUS if (root / f"{name.replace('-', '_')}.npz").is_file()]


def load_candidates(path: str) -> list[dict]:
    """``[{"name", "method", **overrides}]`` with the file's ``common`` overrides merged in
    (JSON lists become tuples, as :class:`NodeConfig` holds them)."""
    spec = json.loads(Path(path).read_text())
    candidates = []
    for entry in spec["candidates"]:
        merged = {**spec.get("common", {}), **entry}
        candidates.append({k: tuple(v) if isinstance(v, list) else v for k, v in merged.items()})
    return candidates


def score_candidate(candidate: dict, dataset: str, splits: int) -> dict:
    overrides = dict(candidate)
    name, method = overrides.pop("name"), overrides.pop("method")
    data = load_node_dataset(dataset)
    metric = metric_for(data.y)
    record = {
        "candidate": name,
        "dataset": data.name,
        "metric": metric,
        "validation": [],
        "test": [],
    }
    start, epoch_ms = time.perf_counter(), []
    for split in range(splits):
        where = make_split("splits", data, split)
        if method in RAW:
            scores = probe_scores(data.x, data.y, where, split, scaling=RAW[method], metric=metric)
        else:
            config = NodeConfig().with_overrides(**overrides)
            result = train_node_model(data, method, config, seed=split, progress=False)
            epoch_ms.append(result.epoch_ms)
            scores = probe_scores(result.embeddings, data.y, where, split, metric=metric)
        record["validation"].append(scores["validation"])
        record["test"].append(scores["test"])
    record["seconds"] = round(time.perf_counter() - start, 1)
    record["epoch_ms"] = round(float(np.mean(epoch_ms)), 1) if epoch_ms else None
    return record


def run(candidates: list[dict], splits: int, out: Path, max_minutes: float) -> None:
    done = set()
    if out.exists():
        done = {
            (r["candidate"], r["dataset"]) for r in map(json.loads, out.read_text().splitlines())
        }
    start = time.perf_counter()
    for candidate in candidates:
        for dataset in on_disk_graphs():
            if (candidate["name"], dataset) in done:
                continue
            if time.perf_counter() - start > 60 * max_minutes:
                print("time budget spent; run again to continue", flush=True)
                return
            record = score_candidate(candidate, dataset, splits)
            print(json.dumps(record), flush=True)
            with open(out, "a") as file:
                file.write(json.dumps(record) + "\n")


def table(candidates: list[dict], splits: int, out: Path, command: str) -> None:
    """Validation (the choice) and test scores per graph, each candidate's mean rank over
    the graphs by validation score, and where it beats the raw-feature probes on test."""
    records = {
        (r["candidate"], r["dataset"]): r for r in map(json.loads, out.read_text().splitlines())
    }
    graphs = on_disk_graphs()
    names = [c["name"] for c in candidates if all((c["name"], g) in records for g in graphs)]
    val = np.array([[np.mean(records[n, g]["validation"]) for g in graphs] for n in names])
    ranks = (-val).argsort(0).argsort(0) + 1  # rank 1: the best validation score on a graph
    columns = ["candidate", *graphs, "mean validation rank"]
    rows = []
    for i, name in enumerate(names):
        cells = []
        for g in graphs:
            r = records[name, g]
            test = f"{np.mean(r['test']):.1f} ± {np.std(r['test']):.1f}"
            cells.append(f"{np.mean(r['validation']):.1f} / {test}")
        rows.append([name, *cells, round(float(ranks[i].mean()), 2)])
    spec = {c["name"]: {k: v for k, v in c.items() if k != "name"} for c in candidates}
    notes = (
        f"Each cell: validation / test score (%), mean (± std of test) over the first {splits} "
        "shipped splits (seed = split index); accuracy, ROC-AUC on minesweeper. The choice "
        "reads the validation scores only: rank 1 is the best validation score on a graph. "
        f"Candidates (method + NodeConfig overrides): {json.dumps(spec)}"
    )
    path = save_table(
        "node_selection",
        "Node classification",
        "Choosing the default for graphs without a published configuration",
        columns,
        rows,
        notes=notes,
        command=command,
    )
    print(f"wrote {path}")
    for row in sorted(rows, key=lambda r: r[-1]):
        print(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "candidates", help="JSON: {common: {...}, candidates: [{name, method, ...}]}"
    )
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--out", default="runs/node_select.jsonl")
    parser.add_argument("--max-minutes", type=float, default=9.0)
    parser.add_argument("--table", action="store_true", help="write the table from --out")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    candidates = load_candidates(args.candidates)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.table:
        command = (
            f"python benchmarks/node_select.py {args.candidates} --splits {args.splits} "
            f"--out {args.out}  (repeated until done, then --table)"
        )
        table(candidates, args.splits, out, command)
    else:
        run(candidates, args.splits, out, args.max_minutes)


if __name__ == "__main__":
    main()
