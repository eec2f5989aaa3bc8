"""Has full-batch training got slower between two versions of the library? GRACE's Cora
configuration trained by each checkout's ``train_node_model``, with cl2gnn's loss and with
GRACE's paper formulation of it (dense, ``_shared.operators.grace_chunked_loss``) through the same
loop, the checkouts alternating process by process; the ratio of the two losses' epochs
within one process compares versions on a machine whose speed drifts.

    git worktree add /tmp/before <commit>
    python -m benchmarks.speed.node_speed_trees --trees /tmp/before . --rounds 3 --epochs 60

Each tree runs this file's ``--child`` mode with ``PYTHONPATH`` set to it: its own library and
its own GRACE formulation (``benchmarks/_shared/operators.py``, or where an older tree keeps
it), loaded from the file."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from cl2gnn.cli import cmdline

# where each version of the benchmarks keeps GRACE's formulation, newest first
OPERATORS = ("_shared/operators.py", "_operators.py", "operators.py")


def child(epochs: int) -> None:
    benchmarks = Path(os.environ["PYTHONPATH"]) / "benchmarks"
    path = next(benchmarks / name for name in OPERATORS if (benchmarks / name).exists())
    spec = importlib.util.spec_from_file_location("tree_operators", path)
    operators = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(operators)
    grace_chunked_loss = operators.grace_chunked_loss

    from cl2gnn.datasets import load_node_dataset
    from cl2gnn.node import default_config, train_node_model

    data = load_node_dataset("Cora")
    config = default_config("Cora").with_overrides(epochs=epochs)

    # a tree's NodeConfig holds the temperature as a field (before method options) or option
    options = getattr(config, "options", {})
    temperature = options["temperature"] if "temperature" in options else config.temperature

    def paper(z1, z2, h1, h2):
        return grace_chunked_loss(z1, z2, temperature, chunk=z1.size(0))

    ours = train_node_model(data, "grace", config, seed=0, progress=False).epoch_ms
    theirs = train_node_model(data, paper, config, seed=0, progress=False).epoch_ms
    print(json.dumps({"cl2gnn_ms": ours, "grace_ms": theirs}))


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", type=Path, default=[Path(".")])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.epochs)
    from benchmarks._shared.results import save_table

    rows = []
    for round_ in range(args.rounds):
        for tree in args.trees:
            tree = tree.resolve()
            commit = subprocess.run(
                ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = (
                subprocess.run(
                    [sys.executable, __file__, "--child", "--epochs", str(args.epochs)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            r = json.loads(out)
            ratio = r["cl2gnn_ms"] / r["grace_ms"]
            rows.append(
                [round_, commit, round(r["cl2gnn_ms"], 1), round(r["grace_ms"], 1), round(ratio, 2)]
            )
            print(rows[-1], flush=True)
    save_table(
        "node_speed_trees",
        "Speed",
        "Cora full-batch epochs by version: cl2gnn's loss against GRACE's formulation",
        ["round", "commit", "cl2gnn ms/epoch", "GRACE formulation ms/epoch", "ratio"],
        rows,
        notes=(
            f"GRACE's Cora configuration, {args.epochs} epochs per loss and process (the first "
            "left out), seed 0; the versions alternate process by process on the same machine. "
            "The GRACE formulation is its paper's loss written densely, through the same "
            "training loop, encoder and views: the ratio is what compares versions."
        ),
    )


if __name__ == "__main__":
    main()
