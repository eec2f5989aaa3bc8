"""GCA's rule for a feature column that is zero on every node: ``zero_columns="itself"``
(the default: that column masked at the cut-off, the others by their importance) against
``"every_column"`` (GCA's code: its NaN masks every column at the cut-off, 0.7, in both
views), on graphs that have such columns: the evidence for the default. One ``cl2gnn
node`` run per seed and rule, the row's configuration in ``--config``::

    python -m cl2gnn node --dataset G --method gca --seed K --seeds 1 --config R.json \\
        --json benchmarks/results/cells/gca_zero_columns/ROW_R_seedK.json  # [--protocol public]
    # R.json: {"zero_columns": "itself"} or {"zero_columns": "every_column"} (with a row's
    # other fields; ROW names the graph and, where it is not the default, the configuration)
    python -m benchmarks.decisions.gca_zero_columns   # -> results/node_gca_zero_columns.json
"""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks._shared import paired
from benchmarks._shared.paired import mean_std, pooled_std, shared_seeds
from benchmarks._shared.results import RESULTS_DIR, save_table
from cl2gnn.cli import cmdline

RUNS = RESULTS_DIR / "cells" / "gca_zero_columns"
RULES = ("itself", "every_column")
COLUMNS = [
    "graph",
    "configuration",
    "seeds",
    "itself (default)",
    "every column (GCA's code)",
    "itself − every column",
    "in pooled std",
]


def read_cells(folder: Path) -> dict[str, dict[str, dict[int, dict]]]:
    """row -> rule -> seed -> the run's ``--json`` record; ``ValueError`` for a cell whose
    configuration is not the rule its name says."""
    cells = paired.read_cells(folder, RULES)
    for row, rules in cells.items():
        for rule, seeds in rules.items():
            for seed, record in seeds.items():
                if record["config"].get("zero_columns", "itself") != rule:
                    raise ValueError(
                        f"{folder / f'{row}_{rule}_seed{seed}.json'}: its configuration's "
                        f"zero_columns is not {rule!r}"
                    )
    return cells


def configuration(config: dict) -> str:
    """What a row's configuration is, in a few words."""
    features = "row-normalised" if config["normalize_features"] else "raw"
    return f"{config['encoder']}, {config['embedding']} read-out, {features} features"


def rows(cells: dict) -> list[list]:
    """One row per row label, over the seeds both rules ran."""
    out = []
    for rules in cells.values():
        seeds = shared_seeds(rules, RULES)
        if not seeds:
            continue
        score = {r: [rules[r][k]["score_mean"] for k in seeds] for r in RULES}
        difference = statistics.fmean(score["itself"]) - statistics.fmean(score["every_column"])
        pooled = pooled_std(score["itself"], score["every_column"])
        first = rules["itself"][seeds[0]]
        out.append(
            [
                first["dataset"],
                configuration(first["config"]),
                len(seeds),
                mean_std(score["itself"]),
                mean_std(score["every_column"]),
                f"{difference:+.2f}",
                f"{difference / pooled:+.2f}" if pooled > 0 else "—",
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
            raise ValueError(f"--runs: no row in {args.runs} has both rules on a seed")
    print(
        save_table(
            "node_gca_zero_columns",
            "Reproduction",
            "GCA's masking where a feature column is zero on every node",
            COLUMNS,
            table,
            notes="GCA's default configuration of the graph (Cora: GRACE's Cora configuration "
            "with GCA's row-normalised features and presence weights; texas and wisconsin: "
            "the library's for graphs without one), and on those two also the side-by-side "
            "configuration (GCN, last layer, row-normalised features, every node a negative). "
            "Cora has one all-zero feature column of 1,433, texas 203 and wisconsin 90 of "
            "1,703. 'every column' is what "
            "GCA's code (CRIPAC-DIG/GCA 0f17497) draws on such a graph: the column's log 0 "
            "makes feature_drop_weights' mean -inf, the NaN spreads through "
            "drop_feature_weighted_2's mean, and every NaN probability falls to the cut-off "
            "0.7. One training run per seed, the library's probe on the graph's split (Cora: "
            "the public split). Pooled std: the square root of the mean of the two rules' "
            "variances over the seeds.",
        )
    )


if __name__ == "__main__":
    main()
