"""One whole mini-batch epoch, the layer-wise embedding of every node and the probe, at
ogbn-products' size (:mod:`benchmarks._shared.large`), each phase's wall time and peak RSS on
every rank (one process, or every rank of a ``torchrun`` group, each generating the graph)::

    python -m benchmarks.speed.large_end_to_end run --preset products --hidden 64 --encoder sage \\
        --num-neighbors 10 5
    torchrun --nproc_per_node=2 -m benchmarks.speed.large_end_to_end run --preset products \\
        --hidden 64 --encoder sage --num-neighbors 10 5
    python -m benchmarks.speed.large_end_to_end table    # -> results/node_large_end_to_end.json
"""

from __future__ import annotations

import sys

from benchmarks._shared import large
from benchmarks._shared.large import PhaseMeter, config_from, csc_copy_note, generate, probe_split
from benchmarks._shared.results import rss_mb, save_table

OUT = "runs/large_end_to_end.jsonl"
COMMAND = (
    "python -m benchmarks.speed.large_end_to_end run --preset products --hidden 64 --encoder sage "
    "--num-neighbors 10 5; torchrun --nproc_per_node=2 -m benchmarks.speed.large_end_to_end run "
    "--preset products --hidden 64 --encoder sage --num-neighbors 10 5; "
    "python -m benchmarks.speed.large_end_to_end table"
)


def measure(args) -> dict:
    """One whole epoch, the layer-wise embedding and the probe, phase by phase; under
    torchrun every rank's phases are gathered on rank 0 (each rank generates the graph)."""
    import torch
    import torch.distributed as dist

    from cl2gnn.distributed import init_from_env, rank_and_world, shutdown
    from cl2gnn.node import probe_scores
    from cl2gnn.node.training.minibatch import MinibatchTrainer

    bare = rss_mb()
    init_from_env("cpu")
    rank, world = rank_and_world()
    meter = PhaseMeter(bare)
    with meter.phase("generate"):
        data = generate(args.preset, args.nodes)
    graph_mb = (data.x.nbytes + data.edge_index.nbytes) / 2**20
    config = config_from(args)
    with meter.phase("setup"):  # the sampler's CSC graph, the degrees, the model
        trainer = MinibatchTrainer(data, "grace", config, seed=0)
    with meter.phase("epoch"):
        loss = float(trainer.epoch())
    with meter.phase("embed"):
        embeddings = trainer.embed()
    scores = {}
    if rank == 0:
        with meter.phase("probe"):
            split = probe_split(data, args.probe_nodes)
            scores["test_accuracy"] = probe_scores(embeddings, data.y, split, 0)["test"]
        scores["raw_feature_accuracy"] = probe_scores(data.x, data.y, split, 0)["test"]
    phases = meter.close()
    ranks = [phases]
    if world > 1:
        ranks = [None] * world
        dist.all_gather_object(ranks, phases)
    shutdown()
    if rank:
        return {}
    return {
        "preset": args.preset,
        "mode": "end_to_end",
        "processes": world,
        "nodes": data.num_nodes,
        "edges": data.edge_index.size(1),
        "csc_in_place": trainer.loader.node_sampler.edge_permutation is None,
        "encoder": config.encoder,
        "hidden": config.out_channels,
        "batch_size": config.batch_size,
        "num_neighbors": list(config.fan_outs()),
        "steps_per_epoch": trainer.steps_per_epoch,
        "loss": loss,
        "graph_mb": graph_mb,
        "phases": ranks,
        "threads": torch.get_num_threads(),
        **scores,
    }


def table(records: list[dict]) -> None:
    rows = []
    for r in records:
        graph = f"{r['preset']}, {r['nodes']:,} nodes, {r['edges']:,} edges"
        training = (
            f"{r['encoder']} {r['hidden']}, batch {r['batch_size']}, fan-out {r['num_neighbors']}"
        )
        for rank, phases in enumerate(r["phases"]):
            for name, phase in phases.items():
                probe = name == "probe"
                rows.append(
                    [
                        graph,
                        training,
                        r["processes"],
                        rank,
                        name,
                        f"{phase['s']:.1f}",
                        f"{phase['peak_rss_above_import_mb']:.0f}",
                        f"{phase['peak_rss_above_import_mb'] / r['graph_mb']:.2f}",
                        f"{r['test_accuracy']:.2f}" if probe else None,
                        f"{r['raw_feature_accuracy']:.2f}" if probe else None,
                    ]
                )
    save_table(
        "node_large_end_to_end",
        "Scale",
        "One whole epoch, the layer-wise embedding and the probe at ogbn-products' size, one seed",
        [
            "graph",
            "training",
            "processes",
            "rank",
            "phase",
            "wall (s)",
            "peak RSS above import (MB)",
            "RSS / graph",
            "probe test acc. (%)",
            "raw-feature probe (%)",
        ],
        rows,
        notes="Each process generated the graph itself. epoch: every seed once (under "
        "torchrun each rank trains on its share of every global batch); embed: layer-wise "
        "inference of every node; probe: logistic regression on rank 0, C on validation "
        "nodes, at most --probe-nodes nodes per set. Peak RSS sampled every 10 ms per "
        "phase; graph tensors: features and undirected edge index." + csc_copy_note(records),
        command=COMMAND,
    )


def arguments(parser) -> None:
    large.training_arguments(parser, OUT)


if __name__ == "__main__":
    sys.exit(large.main(__doc__.split("\n\n")[0], measure, table, OUT, arguments))
