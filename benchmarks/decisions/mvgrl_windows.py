"""MVGRL's steps on its authors' windows (4 random windows of 2,000 consecutive nodes per
step, the default) against steps on the whole graph (``window_size`` null), on graphs with
more nodes than a window: the evidence for the default. One ``cl2gnn node`` run per seed
and variant::

    python -m cl2gnn node --dataset G --method mvgrl --seed K --seeds 1 --json \\
        benchmarks/results/cells/mvgrl_windows/G_windows_seedK.json   # [--protocol public]
    # the same with --config whole.json ({"window_size": null}) -> G_whole_seedK.json
    python -m benchmarks.decisions.mvgrl_windows   # -> results/node_mvgrl_windows.json
"""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks._shared import paired
from benchmarks._shared.paired import mean_std, pooled_std, shared_seeds
from benchmarks._shared.results import RESULTS_DIR, save_table
from cl2gnn.cli import cmdline

RUNS = RESULTS_DIR / "cells" / "mvgrl_windows"
VARIANTS = ("windows", "whole")
COLUMNS = [
    "graph",
    "seeds",
    "windows (default)",
    "whole graph",
    "windows − whole",
    "in pooled std",
    "epochs run: windows / whole",
    "s per seed: windows / whole",
]


def read_cells(folder: Path) -> dict[str, dict[str, dict[int, dict]]]:
    """graph -> variant -> seed -> the run's ``--json`` record."""
    return paired.read_cells(folder, VARIANTS, row="G")


def rows(cells: dict) -> list[list]:
    """One row per graph, over the seeds both variants ran."""
    out = []
    for graph, variants in cells.items():
        seeds = shared_seeds(variants, VARIANTS)
        if not seeds:
            continue
        score = {v: [variants[v][k]["score_mean"] for k in seeds] for v in VARIANTS}
        difference = statistics.fmean(score["windows"]) - statistics.fmean(score["whole"])
        pooled = pooled_std(score["windows"], score["whole"])
        epochs = {
            v: statistics.fmean(sum(variants[v][k]["epochs_run"]) for k in seeds) for v in VARIANTS
        }
        seconds = {
            v: statistics.fmean(
                variants[v][k]["epoch_ms"] * sum(variants[v][k]["epochs_run"]) / 1000 for k in seeds
            )
            for v in VARIANTS
        }
        out.append(
            [
                graph,
                len(seeds),
                mean_std(score["windows"]),
                mean_std(score["whole"]),
                f"{difference:+.2f}",
                f"{difference / pooled:+.2f}" if pooled > 0 else "—",
                f"{epochs['windows']:.0f} / {epochs['whole']:.0f}",
                f"{seconds['windows']:.0f} / {seconds['whole']:.0f}",
            ]
        )
    return out


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=RUNS, help="the --json cells' folder")
    args = parser.parse_args()
    with cmdline.user_errors(parser.prog):
        table = rows(read_cells(args.runs))
        if not table:
            raise ValueError(f"--runs: no graph in {args.runs} has both variants on a seed")
    print(
        save_table(
            "node_mvgrl_windows",
            "Reproduction",
            "MVGRL on its authors' windows against the whole graph",
            COLUMNS,
            table,
            notes="MVGRL's default configuration (its authors' Cora code: one GCN layer 512 "
            "wide per view, the exact dense diffusion, patience 20 on the training loss, up to "
            "3,000 epochs), each step on 4 random windows of 2,000 consecutive nodes (the "
            "default, as its code) or on the whole graph (window_size null); one training run "
            "per seed, the library's probe on the graph's split (Cora: the public split). "
            "Pooled std: the square root of the mean of the two variants' variances over the "
            "seeds. Seconds per seed: the mean epoch time times the epochs run.",
        )
    )


if __name__ == "__main__":
    main()
