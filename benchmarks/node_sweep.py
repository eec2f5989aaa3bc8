"""Configuration sweep on one dataset: each entry of a JSON list (a method plus
:class:`~cl2gnn.node.NodeConfig` overrides) goes through :func:`~cl2gnn.node.run_node` for
``seeds`` seeds, its embeddings scored under the public split and the GRACE protocol.

    python benchmarks/node_sweep.py benchmarks/configs/cora_public.json --out runs/sweep.jsonl

One JSON line per configuration is appended to ``--out`` as soon as it finishes.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from cl2gnn.node import run_node

PROTOCOLS = ("public", "grace")


def parse_entry(entry: dict) -> tuple[str, dict]:
    """``(method, NodeConfig overrides)`` of one JSON entry (JSON lists become tuples)."""
    overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
    return overrides.pop("method"), overrides


def run_entry(dataset: str, entry: dict, seeds: int) -> dict:
    method, overrides = parse_entry(entry)
    start = time.perf_counter()
    results = run_node(dataset, method, PROTOCOLS, seeds, progress=False, **overrides)
    summary = {
        r["protocol"]: [round(r["accuracy_mean"], 2), round(r["accuracy_std"], 2)] for r in results
    }
    seconds = round(time.perf_counter() - start)
    epoch_ms = round(results[0]["epoch_ms"], 1)
    return {**entry, "seeds": seeds, **summary, "epoch_ms": epoch_ms, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", help="JSON list of {method, <NodeConfig field>: value}")
    parser.add_argument("--dataset", default="Cora")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default="runs/node_sweep.jsonl")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for entry in json.loads(Path(args.configs).read_text()):
        record = run_entry(args.dataset, entry, args.seeds)
        print(json.dumps(record), flush=True)
        with open(args.out, "a") as out:
            out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
