"""What a full-batch epoch asks of the host: CSR builds, sorts and read-backs of a device value
per epoch, counted by ``torch.profiler`` over a real run (the trainer's set-up and the
epochs, divided by the epochs; the final embedding apart). On a GPU each read-back is a wait
for the device, and each build or sort a few launches: the epoch should have none of them.

    git worktree add /tmp/before <commit>
    python -m benchmarks.speed.epoch_counts --trees /tmp/before .  # -> node_epoch_counts.json

Each tree runs this file's ``--child`` mode with ``PYTHONPATH`` set to it. Counted events:
CSR builds ``aten::_convert_indices_from_coo_to_csr`` and ``aten::_to_sparse_csr``, sorts
``aten::sort`` (``argsort`` calls it), read-backs ``aten::_local_scalar_dense`` (``item``,
``float``, ``int``, ``bool`` of a tensor) and the ops whose output's size depends on values
(``nonzero``, a boolean index's, and ``unique``), those inside the optimiser's step apart: torch's
Adam reads its step counters, CPU tensors, unless it is fused on CUDA."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from cl2gnn.cli import cmdline, node_arguments

CSR = ("aten::_convert_indices_from_coo_to_csr", "aten::_to_sparse_csr")
SORT = ("aten::sort",)
# item(), float(), bool() of a tensor, and the ops whose output's size depends on its values
READ = ("aten::_local_scalar_dense", "aten::nonzero", "aten::_unique2", "aten::unique_consecutive")
COLUMNS = ("CSR builds", "sorts", "read-backs", "read-backs in the optimiser's step")


def _inside(event, name: str) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith(name):
            return True
        parent = parent.cpu_parent
    return False


def counts(dataset: str, method: str, epochs: int) -> dict:
    """Per epoch: each kind of event over the set-up and ``epochs`` epochs of ``fit``, and
    the same for the final embedding alone."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from cl2gnn.node import default_config, load_node_dataset
    from cl2gnn.node.training.fit import fit
    from cl2gnn.node.training.fullbatch import FullBatchTrainer

    data = load_node_dataset(dataset)
    config = default_config(data, method, graph=data.name).with_overrides(epochs=epochs)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        trainer = FullBatchTrainer(data, method, config, seed=0)
        embed = trainer.embed

        def embed_apart():
            with record_function("final embedding"):
                return embed()

        trainer.embed = embed_apart
        fit(trainer, progress=False)
    tally = {"run": dict.fromkeys(COLUMNS, 0), "embedding": dict.fromkeys(COLUMNS, 0)}
    for event in prof.events():
        kinds = []
        if event.name in CSR:
            kinds.append(COLUMNS[0])
        if event.name in SORT:
            kinds.append(COLUMNS[1])
        if event.name in READ:
            optimiser = _inside(event, "Optimizer.step")
            kinds.append(COLUMNS[3] if optimiser else COLUMNS[2])
        part = "embedding" if _inside(event, "final embedding") else "run"
        for kind in kinds:
            tally[part][kind] += 1
    per_epoch = {kind: value / epochs for kind, value in tally["run"].items()}
    return {"per_epoch": per_epoch, "embedding": tally["embedding"], "torch": torch.__version__}


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", type=Path, default=[Path(".")])
    parser.add_argument("--dataset", type=node_arguments.dataset_argument, default="Cora")
    parser.add_argument("--method", default="grace")
    parser.add_argument("--epochs", type=cmdline.positive_int, default=10)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(counts(args.dataset, args.method, args.epochs)))
        return
    from benchmarks._shared.results import save_table

    rows = []
    for tree in args.trees:
        tree = tree.resolve()
        commit = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        command = [sys.executable, __file__, "--child", "--dataset", args.dataset]
        command += ["--method", args.method, "--epochs", str(args.epochs)]
        with cmdline.user_errors(parser.prog):
            run = subprocess.run(
                command, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True
            )
            if run.returncode:
                raise ValueError(f"{tree}: {run.stderr.strip().splitlines()[-1]}")
        result = json.loads(run.stdout.strip().splitlines()[-1])
        epoch = result["per_epoch"]
        rows.append([commit, *(f"{epoch[kind]:.1f}" for kind in COLUMNS)])
        rows[-1].append(", ".join(f"{result['embedding'][k]} {k}" for k in COLUMNS[:3]))
        print(rows[-1], flush=True)
    print(
        save_table(
            "node_epoch_counts",
            "Speed",
            f"What a full-batch {args.method} epoch asks of the host on {args.dataset}",
            ["commit", *(f"{kind} per epoch" for kind in COLUMNS), "final embedding"],
            rows,
            notes=f"{args.method}'s configuration for {args.dataset}, {args.epochs} epochs of "
            "fit, seed 0; torch.profiler's events over the trainer's set-up and the epochs, "
            "divided by the epochs (the final embedding counted apart). CSR builds: "
            "_convert_indices_from_coo_to_csr and _to_sparse_csr; sorts: sort; read-backs: "
            "_local_scalar_dense, nonzero and unique. On the CPU Adam reads its step counters "
            "(CPU tensors, no wait) in its step; on CUDA the trainer's Adam is fused and reads "
            "none.",
        )
    )


if __name__ == "__main__":
    main()
