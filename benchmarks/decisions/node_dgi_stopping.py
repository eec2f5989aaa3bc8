"""Where DGI's stopping rule ends training on Cora: its authors' code stops when the training
loss has not improved for 20 epochs and keeps the lowest-loss epoch; the library trains a fixed
number of epochs (``cl2gnn.node.config.DGI.epochs``), the epoch this rule keeps on the
library's DGI training loss, printed here per seed.

    python -m benchmarks.decisions.node_dgi_stopping --seeds 1
"""

from __future__ import annotations

import json
import time

from cl2gnn.cli import cmdline
from cl2gnn.node import load_node_dataset
from cl2gnn.node.api import default_config
from cl2gnn.node.training.fullbatch import FullBatchTrainer

PATIENCE = 20  # DGI's execute.py
MAX_EPOCHS = 10_000  # its nb_epochs


def kept_epoch(trainer: FullBatchTrainer) -> dict:
    """Train until the loss has not improved for ``PATIENCE`` epochs; the optimiser steps
    before the lowest loss (the parameters the authors' code reloads)."""
    best, best_epoch, wait, start = float("inf"), 0, 0, time.perf_counter()
    for epoch in range(MAX_EPOCHS):
        loss = float(trainer.epoch())  # the loss at the parameters after `epoch` steps
        if loss < best:
            best, best_epoch, wait = loss, epoch, 0
        else:
            wait += 1
        if wait == PATIENCE:
            break
    seconds = time.perf_counter() - start
    return {"best_epoch": best_epoch, "stopped_at": epoch, "best_loss": best, "seconds": seconds}


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    data = load_node_dataset("Cora")
    config = default_config("Cora", "dgi")
    for seed in range(args.seeds):
        record = kept_epoch(FullBatchTrainer(data, "dgi", config, seed=seed))
        print(json.dumps({"seed": seed, **record}), flush=True)


if __name__ == "__main__":
    main()
