"""A contrastive training step against a supervised GraphSAGE step on the same sampled
batches of a generated graph of OGB size (:mod:`benchmarks._shared.large`): the two
alternate on the same pre-sampled batches, one contrastive step (two augmented views,
encoder and head, InfoNCE over the seeds: the mini-batch trainer's own step) and one
supervised step (encoder, linear classifier, cross-entropy on the seeds), and the contrastive
step with its loss replaced by the sum of the projections (the floor of any loss on two
views: both views' encoder passes, head, backward and optimiser step), all with their
layers trimmed to the rows that reach the seeds (``--untrimmed``: every layer on every
sampled node); then torch.profiler's top operators of each kind of step on the same
batches::

    python -m benchmarks.speed.large_steps run --preset products --steps 20 --hidden 64 \\
        --encoder sage --num-neighbors 10 5 [--untrimmed]      # and --preset arxiv
    python -m benchmarks.speed.large_steps table  # -> results/node_large_steps.json, *_step_profile
"""

from __future__ import annotations

import sys
import time

from benchmarks._shared import large
from benchmarks._shared.floors import without_the_loss
from benchmarks._shared.large import config_from, generate
from benchmarks._shared.results import save_table
from cl2gnn.cli import cmdline

OUT = "runs/large_steps.jsonl"
COMMAND = (
    "python -m benchmarks.speed.large_steps run --preset products --steps 20 --hidden 64 "
    "--encoder sage --num-neighbors 10 5, the same with --preset arxiv, and both with "
    "--matmul-dtype bfloat16 where the CPU has oneDNN's bf16 GEMM (a row per run); then "
    "python -m benchmarks.speed.large_steps table"
)


def measure(args) -> dict:
    """Contrastive against supervised steps on the same pre-sampled batches."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from cl2gnn.graphs import neighbor_loader
    from cl2gnn.node.encoders.features import prepare_features
    from cl2gnn.node.encoders.graph_encoder import GraphEncoder
    from cl2gnn.node.training.minibatch import MinibatchTrainer
    from cl2gnn.node.training.sampler import SeedBatches

    data = generate(args.preset, args.nodes)
    config = config_from(args)
    torch.manual_seed(0)
    loader = neighbor_loader(
        data,
        config.fan_outs(),
        batch_sampler=SeedBatches(data.num_nodes, config.batch_size, seed=0),
    )
    sampled, sample_s = [], []
    it = iter(loader)
    for _ in range(args.steps + 2):
        start = time.perf_counter()
        sampled.append(next(it))
        sample_s.append(time.perf_counter() - start)
    classes = int(data.y.max()) + 1
    in_dim = data.x.size(1)
    contrastive = MinibatchTrainer(data, "grace", config, seed=0)  # cl2gnn's training step
    supervised = GraphEncoder(in_dim, config.out_channels, config.activation, "sage")
    classifier = torch.nn.Linear(config.out_channels, classes)
    supervised_opt = torch.optim.Adam(
        [*supervised.parameters(), *classifier.parameters()], lr=config.learning_rate
    )

    contrastive.trim = contrastive.trim and not args.untrimmed
    views = MinibatchTrainer(data, "grace", config, seed=0)
    views.trim = contrastive.trim
    without_the_loss(views.method)

    def supervised_step(batch):
        # the batch's graph and features as the trainer makes them (whole-graph degrees, the
        # same trimming, the sparse-or-dense decision taken once for the graph), un-augmented
        graph = contrastive.view_graphs(batch.n_id, batch.edge_index, batch.batch_size).kept(None)
        x = prepare_features(supervised.normalize(batch.x), contrastive.sparse)
        out = supervised.encode(x, graph)  # training's fast path
        logits = classifier(out[: batch.batch_size])
        loss = torch.nn.functional.cross_entropy(logits, batch.y[: batch.batch_size])
        supervised_opt.zero_grad(set_to_none=True)
        loss.backward()
        supervised_opt.step()

    times = {"contrastive": [], "supervised": [], "views": []}
    steps = (("contrastive", contrastive.step), ("supervised", supervised_step))
    for i, batch in enumerate(sampled):  # alternate; the first two batches warm up
        for name, step in (*steps, ("views", views.step)):
            start = time.perf_counter()
            step(batch)
            if i >= 2:
                times[name].append(time.perf_counter() - start)
    median = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    sample = sorted(sample_s[2:])[len(sample_s[2:]) // 2]
    profiles = {}  # where each kind of step spends its time, on the same timed batches
    for name, step in steps:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for batch in sampled[2:]:
                step(batch)
        events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
        per_step = [(e.key, e.self_cpu_time_total / 1000 / args.steps) for e in events]
        profiles[name] = per_step[: args.top]
    return {
        "profile_ms_per_step": profiles,
        "preset": args.preset,
        "mode": "steps",
        "encoder": config.encoder,
        "hidden": config.out_channels,
        "batch_size": config.batch_size,
        "num_neighbors": list(config.fan_outs()),
        "steps": args.steps,
        "nodes": data.num_nodes,
        "trimmed": contrastive.trim,
        "matmul_dtype": config.options.get("matmul_dtype"),
        "sampled_nodes_median": sorted(b.num_nodes for b in sampled)[len(sampled) // 2],
        "sample_ms": 1000 * sample,
        "contrastive_ms": 1000 * median["contrastive"],
        "supervised_ms": 1000 * median["supervised"],
        "ratio": median["contrastive"] / median["supervised"],
        "views_ms": 1000 * median["views"],
        "views_ratio": median["views"] / median["supervised"],
        "ratio_with_sampling": (median["contrastive"] + sample) / (median["supervised"] + sample),
        "threads": torch.get_num_threads(),
    }


def save_step_profile(records: list) -> None:
    """One table of the profiled steps records: an operator per row, a column per record and
    kind of step."""

    def label(r: dict) -> str:
        return f"{r['preset']}, {'trimmed' if r['trimmed'] else 'untrimmed'}"

    ms = [{kind: dict(ops) for kind, ops in r["profile_ms_per_step"].items()} for r in records]
    kinds = ("contrastive", "supervised")
    names = list(dict.fromkeys(name for m in ms for kind in kinds for name in m[kind]))
    save_table(
        "node_large_step_profile",
        "Scale",
        "Where a contrastive and a supervised step spend their time: torch.profiler's self "
        "CPU time, ms per step",
        ["operator"] + [f"{label(r)}: {kind}" for r in records for kind in kinds],
        [
            [name]
            + [f"{m[kind][name]:.2f}" if name in m[kind] else None for m in ms for kind in kinds]
            for name in names
        ],
        notes="The top operators of each kind of step by self CPU time over the same batches "
        "the steps table times (a dash: not in that step's top). Medians there, contrastive / "
        "supervised ms per step: "
        + "; ".join(
            f"{label(r)} {r['contrastive_ms']:.1f} / {r['supervised_ms']:.1f}" for r in records
        )
        + " (the profiler's own overhead is in these totals, not in those).",
        command=COMMAND,
    )


def table(records: list[dict]) -> None:
    step_rows = [
        [
            r["preset"],
            "yes" if r.get("trimmed") else "no",
            r["encoder"],
            r.get("matmul_dtype") or "float32",
            r["hidden"],
            r["batch_size"],
            str(r["num_neighbors"]),
            r["sampled_nodes_median"],
            f"{r['sample_ms']:.0f}",
            f"{r['supervised_ms']:.0f}",
            f"{r['contrastive_ms']:.0f}",
            f"{r['ratio']:.2f}",
            f"{r['ratio_with_sampling']:.2f}",
            f"{r['views_ms']:.0f}" if "views_ms" in r else None,
            f"{r['views_ratio']:.2f}" if "views_ratio" in r else None,
        ]
        for r in records
        if r["mode"] == "steps"
    ]
    if step_rows:
        save_table(
            "node_large_steps",
            "Scale",
            "A contrastive step against a supervised GraphSAGE step on the same sampled batches",
            [
                "graph",
                "layers trimmed to the seeds",
                "contrastive encoder",
                "loss products",
                "hidden",
                "batch",
                "fan-out",
                "sampled nodes (median)",
                "sampling (ms)",
                "supervised step (ms)",
                "contrastive step (ms)",
                "ratio",
                "ratio with sampling",
                "two views, no loss (ms)",
                "its ratio: the floor",
            ],
            step_rows,
            notes="Medians over the steps, the kinds alternating on the same batches. Two "
            "views, no loss: the contrastive step with its loss replaced by the sum of the "
            "projections (both views' encoder passes, head, backward, optimiser step), the "
            "floor of a two-view step's ratio whatever its loss costs.",
            command=COMMAND,
        )
    profiled = [r for r in records if r["mode"] == "steps" and "profile_ms_per_step" in r]
    if profiled:
        save_step_profile(profiled)


def arguments(parser) -> None:
    large.training_arguments(parser, OUT)
    parser.add_argument("--steps", type=cmdline.positive_int, default=30)
    parser.add_argument("--untrimmed", action="store_true", help="every layer on every node")
    parser.add_argument("--top", type=cmdline.positive_int, default=12, help="operators shown")


if __name__ == "__main__":
    sys.exit(large.main(__doc__.split("\n\n")[0], measure, table, OUT, arguments))
