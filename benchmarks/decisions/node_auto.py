"""Does method ``auto`` carry to every graph on disk? ``cl2gnn node --dataset G --baselines``
(auto, the default) on each graph under its own protocol and splits, against the trivial
baselines of the same run and the single default of the every-method table
(``results/node_classification.json``: CCA-SSG with the GraphSAGE encoder on the graphs
without a published configuration, GRACE's on Cora, 10 seeds on the same splits; on a graph
that table lacks, the embedded default, ``--method`` of ``default_method`` in the same run).

    python -m benchmarks.decisions.node_auto run [--graphs Cora actor ...] [--out DIR]
    python -m benchmarks.decisions.node_auto table [--out DIR]
    python -m benchmarks.decisions.node_auto widths [--graphs ...] [--widths 512 1024]

``widths`` trains the GraphACL candidate at each width on each graph's scoring seeds, as auto
does, and writes its validation score (the choice's evidence) and time to
``results/node_auto_graphacl_width.json``.

``run`` calls the command once per graph (a graph already in ``--out``, by default
``results/cells/node_auto``, is skipped: the run resumes), keeping its JSON, its wall time and
the graph's row of the table as it stood before (auto before, to compare with); ``table``
writes ``results/node_auto.json``, where a graph not in ``--out`` keeps its earlier row,
labelled with the date it was measured.

Target, per graph: at or above every trivial baseline (auto hands back the untrained encoder
where training does not help), and at least the single default's test score minus one
standard deviation."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._shared.results import RESULTS_DIR
from cl2gnn.cli import cmdline
from cl2gnn.datasets.nodes import EMBEDDED_DATASET, HETEROPHILOUS
from cl2gnn.node.api import default_method

GRAPHS = (EMBEDDED_DATASET, "Cora", *HETEROPHILOUS)  # every graph on disk


BEFORE = ("auto", "chosen", "auto wall s")  # the earlier row's cells shown beside
COLUMNS = [
    "graph",
    "auto",
    "chosen",
    "chosen checkpoint (epoch of epochs)",
    "validation scores (candidates, baselines)",
    "best trivial baseline",
    "single default (10 seeds)",
    "auto wall s",
    "single default s",
    "auto / default",
    "before: auto",
    "before: chosen",
    "before: auto wall s",
    "target",
]


def run(graphs: list[str], out: Path) -> None:
    from benchmarks._shared.results import earlier_rows

    out.mkdir(parents=True, exist_ok=True)
    before = earlier_rows("node_auto")  # the table as it stands: auto before this run
    for graph in graphs:
        path = out / f"{graph}.json"
        if path.exists():
            print(f"{graph}: done already ({path})")
            continue
        start = time.perf_counter()
        command = [sys.executable, "-m", "cl2gnn", "node", "--dataset", graph, "--baselines"]
        command += ["--no-progress", "--json", str(out / f"{graph}.part.json")]
        subprocess.run(command, check=True)
        record = json.loads((out / f"{graph}.part.json").read_text())
        record["wall_seconds"] = time.perf_counter() - start
        if graph in before:
            record["before"] = dict(zip(table_columns(), before[graph], strict=False))
        if graph not in single_default():  # the every-method table has no column for it
            method = default_method(graph)
            command[command.index("--baselines")] = f"--method={method}"
            subprocess.run(command, check=True)
            single = json.loads((out / f"{graph}.part.json").read_text())
            record["single_default"] = [single["score_mean"], single["score_std"]]
        path.write_text(json.dumps(record, indent=1))
        (out / f"{graph}.part.json").unlink()
        print(f"{graph}: auto chose {record['chosen']}, {record['score_mean']:.2f}", flush=True)


def single_default() -> dict[str, tuple[float, float]]:
    """The every-method table's default row: graph -> (mean, std)."""
    table = json.loads((RESULTS_DIR / "node_classification.json").read_text())
    row = next(r for r in table["rows"] if str(r[0]).startswith("default"))
    out = {}
    for column, cell in zip(table["columns"], row, strict=True):
        if column not in ("method", "seeds"):
            mean, std = (float(v) for v in cell.split(" (")[0].split(" ± "))
            out[column.split(" (")[0]] = (mean, std)
    return out


def table_columns() -> list[str]:
    """The columns of the saved table (an earlier run's may differ from :data:`COLUMNS`)."""
    from benchmarks._shared.results import saved_table

    saved = saved_table("node_auto")
    return saved["columns"] if saved else COLUMNS


SHORT = {"raw features": "raw", "untrained encoder": "untrained"}


def short(label: str) -> str:
    """A candidate's or baseline's label as the table writes it (a row's line stays under
    the results page's width): "grace (Cora's published)" as "grace (published)"."""
    return SHORT.get(label, re.sub(r"\([^()]*'s published\)", "(published)", label))


def table(out: Path, note: str = "") -> None:
    from benchmarks._shared.results import earlier_rows, save_table

    default = single_default()
    rows, records = [], {}
    for graph in GRAPHS:
        path = out / f"{graph}.json"
        if not path.exists():
            continue
        r = records[graph] = json.loads(path.read_text())
        baselines = {name: b["score_mean"] for name, b in r["baselines"].items()}
        floor = max(baselines.values())
        mean, std = r.get("single_default") or default[graph]
        met = r["score_mean"] >= floor and r["score_mean"] >= mean - std
        candidates = r["candidates"]
        # the single default (the first candidate) trained for every seed, from its own
        # two scoring seeds' time
        default_seconds = next(iter(candidates.values()))["seconds"] * len(r["seeds"]) / 2
        rows.append(
            [
                f"{graph} ({r['protocol']}, {r['metric'].replace('_', '-')})",
                f"{r['score_mean']:.2f} ± {r['score_std']:.2f}",
                short(r["chosen"]),  # its checkpoint in the next column
                f"{r['chosen_epoch']} of {r['epochs']}",
                ", ".join(
                    f"{short(label)} {c['validation']:.1f}"
                    for label, c in candidates.items()
                    if c["validation"] is not None
                ),
                f"{floor:.2f}",
                f"{mean:.2f} ± {std:.2f}",
                round(r["wall_seconds"]),
                round(default_seconds),
                round(r["wall_seconds"] / default_seconds, 2),
                *(short(str(r.get("before", {}).get(c, "—"))) for c in BEFORE),
                "met" if met else "not met",
            ]
        )
    # a graph measured by an earlier run (its record no longer in --out) keeps its row, its
    # cells under the columns it had
    for graph, row in earlier_rows("node_auto").items():
        if graph not in records:
            records[graph] = None
            cells = dict(zip(table_columns(), row, strict=True))
            rows.append([cells.get(column, "—") for column in COLUMNS])
    rows.sort(key=lambda row: GRAPHS.index(row[0].split(" (")[0]))
    missing = [graph for graph in GRAPHS if graph not in records]
    save_table(
        "node_auto",
        "Node classification",
        "Method auto: chosen on each graph's validation nodes",
        COLUMNS,
        rows,
        notes=(
            "Score in percent, mean ± std over the seeds (the graph's protocol and splits, as the "
            "every-method table). auto trains each candidate on the first 2 seeds and probes "
            "their validation nodes alone (cross-validation on the training nodes under the "
            "GRACE protocol) at 0, 1/8, 1/4, 1/2 and all of its epochs (0: the untrained "
            "encoder), then trains the best (candidate, checkpoint) for the other seeds, each "
            "taken at that checkpoint; a candidate's validation score is at its best "
            "checkpoint. 'before': the row of the table this run replaced (auto "
            "choosing among full runs only; '—' where the graph was not re-run or had no row). "
            "'auto wall s': the whole "
            "command (baselines included); 'single default s': the default candidate's "
            "training time on its 2 scoring seeds in the same run, times seeds / 2. Target: "
            "at or above every trivial baseline (raw features, standardised raw features, "
            "untrained encoder, same run) and at least the single default's score minus its "
            "std (the every-method table's default row, 10 seeds on the same splits)."
            + (f" Not run: {', '.join(missing)}." if missing else "")
            + (f" {note}" if note else "")
        ),
        command="python -m benchmarks.decisions.node_auto run "
        "&& python -m benchmarks.decisions.node_auto table",
    )
    print(json.dumps(rows, indent=1))


def widths(graphs: list[str], values: list[int]) -> None:
    from benchmarks._shared.results import save_table
    from cl2gnn.datasets import load_node_dataset
    from cl2gnn.node.evaluation.auto import scoring_seeds
    from cl2gnn.node.evaluation.probes import default_protocol, make_split, metric_for, probe_scores
    from cl2gnn.node.presets import candidates
    from cl2gnn.node.training.fit import train_run

    rows = []
    for graph in graphs:
        data = load_node_dataset(graph)
        protocol = default_protocol(data)
        _, method, base = next(c for c in candidates(data.name) if c[1] == "graphacl")
        row = [graph]
        for width in values:
            config = base.with_overrides(out_channels=width, hidden_channels=width)
            start, scores = time.perf_counter(), []
            for seed in scoring_seeds(data, 0, protocol):
                result = train_run(data, method, config, seed=seed, progress=False)
                split = make_split(protocol, data, seed)
                scores.append(
                    probe_scores(
                        result.embeddings,
                        data.y,
                        (*split[:2], None),
                        seed,
                        metric=metric_for(data.y),
                    )["validation"]
                )
            seconds = time.perf_counter() - start
            row += [round(sum(scores) / len(scores), 2), round(seconds, 1)]
            print(graph, width, row[-2:], flush=True)
        rows.append(row)
    columns = ["graph"]
    for width in values:
        columns += [f"validation {width} wide (%)", f"seconds {width} wide"]
    save_table(
        "node_auto_graphacl_width",
        "Node classification",
        "Method auto: the GraphACL candidate's width",
        columns,
        rows,
        notes=(
            "The GraphACL candidate of method auto (its authors' configuration for the wiki "
            "graphs) trained at each width on the graph's scoring seeds, as auto trains it: the "
            "mean validation score auto chooses by (percent) and the training and probing time "
            "of those seeds."
        ),
        command="python -m benchmarks.decisions.node_auto widths --widths "
        + " ".join(map(str, values))
        + " --graphs "
        + " ".join(graphs),
    )


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("run", "table", "widths"))
    parser.add_argument("--graphs", nargs="+", choices=GRAPHS, default=list(GRAPHS))
    parser.add_argument("--widths", nargs="+", type=int, default=[512, 1024])
    parser.add_argument("--note", default="", help="table: a sentence added to the notes")
    parser.add_argument(
        "--out", type=Path, default=RESULTS_DIR / "cells" / "node_auto", help="one JSON per graph"
    )
    args = parser.parse_args()
    if args.action == "run":
        run(args.graphs, args.out)
    elif args.action == "widths":
        widths(args.graphs, args.widths)
    else:
        table(args.out, args.note)


if __name__ == "__main__":
    main()
