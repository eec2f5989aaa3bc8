"""Configuration sweep on one dataset: each entry of a JSON list (a method plus
:class:`~cl2gnn.node.NodeConfig` overrides) goes through
:func:`cl2gnn.node.evaluation.experiment.run_experiment` for ``seeds`` seeds, its embeddings scored
under the public split and the GRACE protocol.

    python -m benchmarks.studies.node_sweep benchmarks/configs/cora_public.json \
        --out runs/sweep.jsonl

One JSON line per configuration is appended to ``--out`` as soon as it finishes. The options
and every entry of the list are checked before torch loads (``prog: error: ...`` naming the
file and entry, exit 2, nothing written), the dataset's public split before the first
training.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

from benchmarks._shared import node_args
from cl2gnn.cli import cmdline, node_arguments

PROTOCOLS = ("public", "grace")


def parse_entry(entry: dict) -> tuple[str, dict]:
    """``(method, NodeConfig overrides)`` of one JSON entry (JSON lists become tuples)."""
    overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
    return overrides.pop("method"), overrides


def run_entry(dataset: str, entry: dict, seeds: int) -> dict:
    from cl2gnn.node.evaluation.experiment import run_experiment

    method, overrides = parse_entry(entry)
    start = time.perf_counter()
    results = run_experiment(dataset, method, PROTOCOLS, seeds, progress=False, **overrides)
    summary = {
        r["protocol"]: [round(r["score_mean"], 2), round(r["score_std"], 2)] for r in results
    }
    seconds = round(time.perf_counter() - start)
    epoch_ms = round(results[0]["epoch_ms"], 1)
    return {**entry, "seeds": seeds, **summary, "epoch_ms": epoch_ms, "seconds": seconds}


def check_public_split(name: str) -> None:
    """``ValueError`` unless dataset ``name`` loads and has Planetoid's public split."""
    from cl2gnn.datasets import load_node_dataset
    from cl2gnn.node import make_split

    make_split("public", load_node_dataset(name), 0)


def main() -> None:
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "configs",
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
    parser.add_argument("--out", type=cmdline.output_file, default="runs/node_sweep.jsonl")
    args = parser.parse_args()
    node_args.check_methods(parser, args.configs)
    warnings.filterwarnings("ignore")  # the probes' convergence notices, run after run
    with cmdline.user_errors(parser.prog):
        check_public_split(args.dataset)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        for entry in args.configs:
            record = run_entry(args.dataset, entry, args.seeds)
            print(json.dumps(record), flush=True)
            with open(args.out, "a") as out:
                out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
