"""How long an epoch takes, and how much memory, on generated graphs of OGB size: full-batch
against mini-batch at ogbn-arxiv's size, mini-batch at ogbn-products' size in one process and
in two (``torchrun``). Each ``run`` is one process (or one ``torchrun`` group) that
generates its graph (:mod:`benchmarks._shared.large`) and appends one JSON line to
``--out``; ``table`` writes ``results/node_large.json``::

    python -m benchmarks.speed.large_training run --preset products --max-steps 100 --hidden 64 \\
        --encoder sage --num-neighbors 10 5
    torchrun --nproc_per_node=2 -m benchmarks.speed.large_training run --preset products \\
        --max-steps 100 --hidden 64 --encoder sage --num-neighbors 10 5 --no-embed
    python -m benchmarks.speed.large_training run --preset arxiv --epochs 5 --encoder sage
    python -m benchmarks.speed.large_training run --preset arxiv --mode full --num-keys 256 \\
        --epochs 20 --encoder sage
    python -m benchmarks.speed.large_training table

A run reports seconds per epoch (or per step), seed nodes per second, the peak RSS of
training and embedding (sampled every 10 ms) above the bare import (the RSS after importing
torch and cl2gnn) beside the graph's own tensors (features + undirected edge index), and,
for full epochs, the probe's test accuracy on the generator's labels (logistic regression on
the embeddings of the generator's train nodes, ``C`` on its validation nodes; capped at
``--probe-nodes`` nodes per set to bound the probe's time).
"""

from __future__ import annotations

import sys
import time

from benchmarks._shared import large
from benchmarks._shared.large import PhaseMeter, config_from, generate, probe_split
from benchmarks._shared.results import rss_mb, save_table
from cl2gnn.cli import cmdline

OUT = "runs/large_training.jsonl"
COMMAND = (  # the rows of results/node_large.json, one command each
    "python -m benchmarks.speed.large_training run --preset products --max-steps 100 --hidden 64 "
    "--encoder sage --num-neighbors 10 5; torchrun --nproc_per_node=2 "
    "-m benchmarks.speed.large_training run --preset products --max-steps 100 --hidden 64 "
    "--encoder sage --num-neighbors 10 5 --no-embed; python -m benchmarks.speed.large_training run "
    "--preset arxiv --epochs 5 --encoder sage; python -m benchmarks.speed.large_training run "
    "--preset arxiv --mode full --num-keys 256 --epochs 20 --encoder sage; "
    "python -m benchmarks.speed.large_training table"
)


def measure(args) -> dict:
    if args.mode == "full" and args.max_steps:
        raise ValueError("--max-steps applies to --mode minibatch")
    import torch

    from cl2gnn.distributed import init_from_env, rank_and_world, shutdown
    from cl2gnn.node import probe_scores, train_node_model
    from cl2gnn.node.training.minibatch import MinibatchTrainer

    bare = rss_mb()
    init_from_env("cpu")
    rank, world = rank_and_world()
    start = time.perf_counter()
    data = generate(args.preset, args.nodes)
    generated_s = time.perf_counter() - start
    graph_mb = (data.x.nbytes + data.edge_index.nbytes) / 2**20
    config = config_from(args)
    meter = PhaseMeter(bare)  # training's own peak: the generator's sort peaks higher
    start = time.perf_counter()
    embeddings = None
    with meter.phase("train"):
        if args.max_steps:  # the first steps of an epoch (a step's memory is the same)
            trainer = MinibatchTrainer(data, "grace", config, seed=0)
            trainer.epoch(max_steps=2)  # warm-up
            start = time.perf_counter()
            losses = [float(trainer.epoch(max_steps=args.max_steps))]
            epoch_ms = 1000 * (time.perf_counter() - start)
            if not args.no_embed:
                embed_start = time.perf_counter()
                embeddings = trainer.embed()
                embed_s = time.perf_counter() - embed_start
        else:
            result = train_node_model(data, "grace", config, seed=0, progress=rank == 0)
            losses, epoch_ms, embeddings = result.losses, result.epoch_ms, result.embeddings
    total_s = time.perf_counter() - start
    train_peak = meter.close()["train"]["peak_rss_above_import_mb"]
    record = {
        "preset": args.preset,
        "mode": args.mode,
        "processes": world,
        "encoder": config.encoder,
        "hidden": config.out_channels,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "num_neighbors": list(config.fan_outs()) if config.batch_size else None,
        "num_keys": config.options.get("num_keys"),
        "max_steps": args.max_steps,
        "embedded": embeddings is not None,
        "epoch_s": epoch_ms / 1000,
        "train_and_embed_s": total_s,
        "generate_s": generated_s,
        "graph_mb": graph_mb,
        "bare_rss_mb": bare,
        "peak_rss_above_import_mb": train_peak,
        "final_loss": losses[-1],
        "threads": torch.get_num_threads(),
    }
    if config.batch_size:  # seed nodes per second of training (every rank's)
        seeds = args.max_steps * config.batch_size if args.max_steps else data.num_nodes
        record["seeds_per_s"] = min(seeds, data.num_nodes) / (epoch_ms / 1000)
    if args.max_steps and embeddings is not None:
        record["embed_s"] = embed_s
    if rank == 0 and embeddings is not None:
        split = probe_split(data, args.probe_nodes)
        record["test_accuracy"] = probe_scores(embeddings, data.y, split, 0)["test"]
        raw = probe_scores(data.x, data.y, split, 0)["test"]
        record["raw_feature_accuracy"] = raw
    shutdown()
    return record if rank == 0 else {}


def save_node_large(rows: list) -> None:
    save_table(
        "node_large",
        "Scale",
        "Node contrastive learning on generated graphs of OGB size (contextual SBM), one seed",
        [
            "graph",
            "training",
            "processes",
            "encoder",
            "hidden",
            "epochs",
            "s / epoch",
            "embedding pass (s)",
            "seeds / s",
            "graph tensors (MB)",
            "peak RSS above import (MB)",
            "RSS / graph",
            "probe test acc. (%)",
            "raw-feature probe (%)",
        ],
        rows,
        notes="Each row one process (or one torchrun group; rank 0's memory) that generated "
        "the graph itself, sorted by target. Peak RSS: training's and the embedding's own, "
        "sampled every 10 ms, above the bare import. Throughput rows (first N steps) report "
        "the global batch's seeds per second over those steps (all ranks together). Probe: "
        "logistic regression, C on validation nodes, at most --probe-nodes nodes per set.",
        command=COMMAND,
    )


def table(records: list[dict]) -> None:
    rows = []
    for r in records:
        keys = "exact tiled InfoNCE" if r["num_keys"] is None else f"{r['num_keys']} sampled keys"
        what = f"full batch, {keys}"
        if r["mode"] == "minibatch":
            what = f"mini-batch {r['batch_size']}, fan-out {r['num_neighbors']}"
            if r["max_steps"]:
                what += f", first {r['max_steps']} steps"
        rows.append(
            [
                r["preset"],
                what,
                r["processes"],
                r["encoder"],
                r["hidden"],
                r["epochs"],
                f"{r['epoch_s']:.1f}" + (f" ({r['max_steps']} steps)" if r["max_steps"] else ""),
                f"{r['embed_s']:.0f}" if "embed_s" in r else None,
                f"{r['seeds_per_s']:.0f}" if "seeds_per_s" in r else None,
                f"{r['graph_mb']:.0f}",
                f"{r['peak_rss_above_import_mb']:.0f}",
                f"{r['peak_rss_above_import_mb'] / r['graph_mb']:.2f}",
                f"{r['test_accuracy']:.2f}" if "test_accuracy" in r else None,
                f"{r['raw_feature_accuracy']:.2f}" if "raw_feature_accuracy" in r else None,
            ]
        )
    save_node_large(rows)


def arguments(parser) -> None:
    large.training_arguments(parser, OUT)
    parser.add_argument("--max-steps", type=cmdline.positive_int, help="mini-batch: this many")
    parser.add_argument("--no-embed", action="store_true", help="with --max-steps: no embeddings")


if __name__ == "__main__":
    sys.exit(large.main(__doc__.split("\n\n")[0], measure, table, OUT, arguments))
