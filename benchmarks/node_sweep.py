"""Configuration sweep on one dataset: each entry of a JSON list (a method plus
:class:`~cl2gnn.node.NodeConfig` overrides) is trained for ``seeds`` seeds and its
embeddings are scored under the public split and the GRACE protocol.

    python benchmarks/node_sweep.py benchmarks/configs/cora_public.json --out runs/sweep.jsonl

One JSON line per configuration is appended to ``--out`` as soon as it finishes.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from cl2gnn.node import (
    default_config,
    load_node_dataset,
    make_split,
    probe_accuracy,
    train_node_model,
)

PROTOCOLS = ("public", "grace")


def run_entry(data, entry: dict, seeds: int) -> dict:
    overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
    method = overrides.pop("method")
    config = default_config(data.name).with_overrides(**overrides)
    scores = {p: [] for p in PROTOCOLS}
    start = time.perf_counter()
    for seed in range(seeds):
        result = train_node_model(data, method, config, seed, progress=False)
        for protocol in PROTOCOLS:
            split = make_split(protocol, data, seed)
            scores[protocol].append(probe_accuracy(result.embeddings, data.y, split, seed))
    summary = {
        p: [round(float(np.mean(s)), 2), round(float(np.std(s)), 2)] for p, s in scores.items()
    }
    return {**entry, "seeds": seeds, **summary, "seconds": round(time.perf_counter() - start)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", help="JSON list of {method, <NodeConfig field>: value}")
    parser.add_argument("--dataset", default="Cora")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default="runs/node_sweep.jsonl")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    data = load_node_dataset(args.dataset)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for entry in json.loads(Path(args.configs).read_text()):
        record = run_entry(data, entry, args.seeds)
        print(json.dumps(record), flush=True)
        with open(args.out, "a") as out:
            out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
