"""Choosing one default for graphs without a published configuration, on every on-disk
heterophilous graph together.

Each candidate of a JSON file (a method plus :class:`~cl2gnn.node.NodeConfig` overrides,
over the file's ``common`` overrides and the method's own configuration — the same on every
graph, as a default must be: GRACE's Cora configuration for GRACE's family, the authors'
configuration without a graph's own for the others; ``"epochs": 0`` is that encoder
untrained) trains on the first ``--splits`` shipped splits of
every graph (seed = split index) and is probed as the ``splits`` protocol does (logistic
regression, ``C`` chosen on the validation nodes); a graph without shipped splits (Cora,
``--datasets Cora``) uses as many seeds of the GRACE protocol (``C`` by cross-validation,
whose score stands for the validation score). Both the validation and the test score of each
split are recorded; candidates are ranked by their **validation** scores, so that the test
nodes take no part in the choice.

    python -m benchmarks.decisions.node_select benchmarks/configs/default_candidates.json \\
        --splits 3 --out runs/default_select.jsonl
    python -m benchmarks.decisions.node_select benchmarks/configs/default_candidates.json \\
        --splits 3 --out runs/default_select.jsonl --table --name node_default_selection
    python -m benchmarks.decisions.node_select benchmarks/configs/published_features.json \\
        --datasets Cora --splits 10 --out runs/cora_features.jsonl \\
        [--table --name node_features_cora --title "..."]

Each (candidate, graph) is one entry of the journal ``--out`` (``_shared.runner.Journal``): a run
stopped part-way carries on where it stopped when started again. The first rows of the
table are the raw-feature probes (computed here, no training); the candidates themselves go
to the table's ``config`` field.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

from benchmarks._shared.results import earlier_rows, save_table
from benchmarks._shared.runner import Journal
from cl2gnn.cli import cmdline, node_arguments
from cl2gnn.datasets.nodes import HETEROPHILOUS
from cl2gnn.node import (
    GRACE_PUBLISHED,
    load_node_dataset,
    make_split,
    probe_scores,
    train_node_model,
)
from cl2gnn.node.evaluation import auto
from cl2gnn.node.evaluation.probes import metric_for, num_splits
from cl2gnn.node.presets import METHOD_DEFAULTS

RAW = {auto.RAW: "l2", auto.STANDARDISED: "standard"}


def on_disk_graphs() -> list[str]:
    root = Path(os.environ.get("CL2GNN_DATA", "")) / "heterophilous"
    return [name for name in HETEROPHILOUS if (root / f"{name.replace('-', '_')}.npz").is_file()]


def load_candidates(path: str) -> list[dict]:
    """``[{"name", "method", **overrides}]`` with the file's ``common`` overrides merged in
    (JSON lists become tuples, as :class:`NodeConfig` holds them); ``ValueError`` naming the
    file, the candidate and the name where a name is neither a :class:`NodeConfig` field nor
    a method's option, or its value is out of range
    (:func:`~cl2gnn.cli.node_arguments.checked_entries`)."""
    spec = json.loads(Path(path).read_text())
    candidates = []
    for entry in spec["candidates"]:
        merged = {**spec.get("common", {}), **entry}
        try:
            node_arguments.checked_entries(
                {k: v for k, v in merged.items() if k not in ("name", "method")}
            )
        except ValueError as error:
            raise ValueError(f"{path}: candidate {merged.get('name')!r}: {error}") from None
        candidates.append({k: tuple(v) if isinstance(v, list) else v for k, v in merged.items()})
    return candidates


def score_candidate(candidate: dict, dataset: str, splits: int) -> dict:
    overrides = dict(candidate)
    name, method = overrides.pop("name"), overrides.pop("method")
    data = load_node_dataset(dataset)
    metric, protocol = metric_for(data.y), "splits" if num_splits(data) else "grace"
    record = {
        "candidate": name,
        "dataset": data.name,
        "metric": metric,
        "validation": [],
        "test": [],
    }
    start, epoch_ms = time.perf_counter(), []
    for split in range(splits):
        where = make_split(protocol, data, split)
        if method in RAW:
            scores = probe_scores(data.x, data.y, where, split, scaling=RAW[method], metric=metric)
        else:
            config = METHOD_DEFAULTS.get(method, GRACE_PUBLISHED["Cora"]).with_overrides(
                **overrides
            )
            result = train_node_model(data, method, config, seed=split, progress=False)
            epoch_ms.append(result.epoch_ms)
            scores = probe_scores(result.embeddings, data.y, where, split, metric=metric)
        record["validation"].append(scores["validation"])
        record["test"].append(scores["test"])
    record["seconds"] = round(time.perf_counter() - start, 1)
    record["epoch_ms"] = round(float(np.mean(epoch_ms)), 1) if epoch_ms else None
    return record


def run(candidates: list[dict], graphs: list[str], splits: int, out: Path) -> None:
    """Every (candidate, graph) that the journal ``out`` lacks."""

    def measure(candidate: dict, dataset: str) -> dict:
        record = score_candidate(candidate, dataset, splits)
        print(json.dumps(record), flush=True)
        return record

    Journal(out).run(
        ((c["name"], g), lambda c=c, g=g: measure(c, g)) for c in candidates for g in graphs
    )


def cell_means(text: str) -> tuple[float, float]:
    """The validation and test means of a cell ``"validation / test ± std"``."""
    validation, _, test = text.partition(" / ")
    return float(validation), float(test.split()[0])


def table(
    candidates: list[dict],
    graphs: list[str],
    splits: int,
    out: Path,
    name: str,
    command: str,
    title: str = "Choosing the default for graphs without a published configuration",
) -> None:
    """Validation (the choice) and test scores per graph, each candidate's mean rank over
    the graphs by validation score, and on how many graphs it beats both raw-feature probes
    on test; the notes name the trained candidate with the best mean validation rank. A
    candidate without a record on every graph keeps its row of the table's earlier run
    (``earlier_rows``, labelled with the date it was measured), its scores read off it."""
    records = {(r["candidate"], r["dataset"]): r for r in Journal(out).values()}
    earlier = earlier_rows(name, columns=["candidate", *graphs])
    means, labels, cells = {}, {}, {}  # candidate -> graph -> (validation, test) means
    for c in candidates:
        n = c["name"]
        if all((n, g) in records for g in graphs):
            rs = [records[n, g] for g in graphs]
            labels[n] = n
            cells[n] = [
                f"{np.mean(r['validation']):.1f} / {np.mean(r['test']):.1f} ± "
                f"{np.std(r['test']):.1f}"
                for r in rs
            ]
        elif (row := earlier.get(n.split(" (")[0])) is not None:
            labels[n], cells[n] = row[0], row[1 : 1 + len(graphs)]
        else:
            continue
        # every candidate compared on its cells' means as shown (an earlier row's are rounded)
        means[n] = [cell_means(text) for text in cells[n]]
    chosen = [c for c in candidates if c["name"] in means]
    names = [c["name"] for c in chosen]
    val = np.array([[v for v, _ in means[n]] for n in names])
    # rank 1: the best validation score on a graph; tied scores share the mean of their ranks
    ranks = rankdata(-val, axis=0)
    raw = [n for n in RAW if n in names]
    floor = [max(means[n][j][1] for n in raw) for j in range(len(graphs))] if raw else []
    columns = ["candidate", *graphs, "mean validation rank"]
    columns += ["graphs above the raw probes (test)"] if floor else []
    rows = []
    for i, candidate in enumerate(names):
        rows.append([labels[candidate], *cells[candidate], round(float(ranks[i].mean()), 2)])
        if floor:
            wins = sum(t > f for (_, t), f in zip(means[candidate], floor, strict=True))
            rows[-1].append(None if candidate in RAW else f"{wins}/{len(graphs)}")
    trained = [
        (float(ranks[i].mean()), n)
        for i, (n, c) in enumerate(zip(names, chosen, strict=True))
        if c["method"] not in RAW and c.get("epochs") != 0
    ]
    best = f" Best trained candidate by mean validation rank: {min(trained)[1]}." if trained else ""
    spec = {c["name"]: {k: v for k, v in c.items() if k != "name"} for c in chosen}
    notes = (
        f"Each cell: validation / test score (%), mean (± std of test) over the first {splits} "
        "shipped splits (seed = split index; GRACE protocol seeds on a graph without splits, "
        "cross-validation standing for validation); accuracy, ROC-AUC on minesweeper. The choice "
        "reads the validation scores only: rank 1 is the best validation score on a graph (as "
        "shown, ties sharing their mean rank), the rank averaged over the graphs."
        + (
            " The last column counts the graphs where the mean test score is above both "
            "raw-feature probes'."
            if floor
            else ""
        )
        + best
        + " Candidates: method + NodeConfig changes over the method's configuration (GRACE's "
        "Cora one for GRACE's family); epochs 0: the encoder untrained."
    )
    path = save_table(
        name,
        "Node classification",
        title,
        columns,
        rows,
        notes=notes,
        command=command,
        config={"candidates": spec},
    )
    print(f"wrote {path}")
    for row in sorted(rows, key=lambda r: r[len(graphs) + 1]):
        print(row)


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "candidates", help="JSON: {common: {...}, candidates: [{name, method, ...}]}"
    )
    parser.add_argument("--datasets", nargs="+", help="default: the heterophilous graphs on disk")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="measure only these candidates (default: all)"
    )
    parser.add_argument("--out", default="runs/node_select.jsonl")
    parser.add_argument("--table", action="store_true", help="write the table from --out")
    parser.add_argument("--name", default="node_selection", help="the table's results/ name")
    parser.add_argument("--title", help="the table's title (default: the default's choice)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    try:
        candidates = load_candidates(args.candidates)
    except (OSError, ValueError, KeyError) as error:
        parser.error(f"argument candidates: {error}")
    names = [c["name"] for c in candidates]
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        parser.error(f"argument --only: not a candidate of {args.candidates}: {unknown}")
    if args.table and args.only:
        parser.error("argument --only: measures a subset; --table lists every candidate")
    graphs = args.datasets or on_disk_graphs()
    if not graphs:
        parser.error("no graphs: set $CL2GNN_DATA to the data on disk or name --datasets")
    out = Path(args.out)  # the journal makes its folder with its first entry
    if args.table:
        datasets = f" --datasets {' '.join(args.datasets)}" if args.datasets else ""
        command = (
            f"python -m benchmarks.decisions.node_select {args.candidates}{datasets} "
            f"--splits {args.splits} --out {args.out}, then the same with --table "
            f"--name {args.name}"
        )
        title = {"title": args.title} if args.title else {}
        table(candidates, graphs, args.splits, out, args.name, command, **title)
    else:
        run(
            [c for c in candidates if not args.only or c["name"] in args.only],
            graphs,
            args.splits,
            out,
        )


if __name__ == "__main__":
    main()
