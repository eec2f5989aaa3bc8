"""Where a full-batch epoch's time goes: each phase of a training step (median over the
epochs, the first ``--warmup`` left out; the encoder is also run apart to time it, and
"total" leaves that extra pass out) and the operators that take the most time
(``torch.profiler``, per epoch), for a graph's default GRACE-scheme configuration.

    python benchmarks/epoch_profile.py --dataset Cora   # -> results/node_epoch_profile.json
"""

from __future__ import annotations

import itertools
import statistics
import time

from _results import save_table  # benchmarks/_results.py
from torch.profiler import ProfilerActivity, profile

from cl2gnn.apps import cmdline

PHASES = ("augment", "propagation graphs", "encoder, both views", "head and loss")
PHASES += ("backward", "optimiser", "total")


def phase_times(trainer, epochs: int, warmup: int) -> dict[str, float]:
    """Median ms of each phase of :meth:`FullBatchTrainer.step`, done step by step."""
    from cl2gnn.node.methods import ViewBatch
    from cl2gnn.node.views import augment

    encoder, n, config = trainer.encoder, trainer.num_nodes, trainer.config
    times = {phase: [] for phase in PHASES}
    for epoch in range(epochs + warmup):
        marks = [time.perf_counter()]
        trainer.model.train()
        views = [
            augment(trainer.x, trainer.edge_index, *config.view_probabilities(v)) for v in (0, 1)
        ]
        marks.append(time.perf_counter())
        graphs = [encoder.propagation_graph(e, n) for _, e in views]
        marks.append(time.perf_counter())
        for (x, _), graph in zip(views, graphs, strict=True):
            encoder(x, graph)  # timed apart; the method runs the encoder again below
        marks.append(time.perf_counter())
        batch = ViewBatch(
            [(x, g) for (x, _), g in zip(views, graphs, strict=True)], trainer.edge_index, n
        )
        loss = trainer.model(batch)
        marks.append(time.perf_counter())
        trainer.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        marks.append(time.perf_counter())
        trainer.optimizer.step()
        marks.append(time.perf_counter())
        if epoch < warmup:
            continue
        step = [b - a for a, b in itertools.pairwise(marks)]
        step[3] -= step[2]  # the method's forward less its encoder passes
        for phase, seconds in zip(PHASES, [*step, sum(step)], strict=True):
            times[phase].append(seconds)
    return {phase: 1000 * statistics.median(v) for phase, v in times.items()}


def top_operators(trainer, epochs: int, count: int) -> list[tuple[str, float, float]]:
    """The ``count`` operators with the most self CPU time: (name, ms per epoch, share)."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(epochs):
            trainer.step()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    return [
        (e.key, e.self_cpu_time_total / 1000 / epochs, e.self_cpu_time_total / total)
        for e in events[:count]
    ]


def main() -> None:
    from cl2gnn.node import default_config, load_node_dataset
    from cl2gnn.node.fullbatch import FullBatchTrainer

    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="Cora")
    parser.add_argument("--epochs", type=cmdline.positive_int, default=20)
    parser.add_argument("--warmup", type=cmdline.non_negative_int, default=5)
    parser.add_argument("--top", type=cmdline.positive_int, default=10)
    args = parser.parse_args()
    with cmdline.user_errors(parser.prog):
        data = load_node_dataset(args.dataset)
        config = default_config(data.name, "grace")
        trainer = FullBatchTrainer(data, "grace", config, seed=0)
        phases = phase_times(trainer, args.epochs, args.warmup)
        operators = top_operators(trainer, 5, args.top)
    rows = [
        ["phase", name, f"{ms:.1f}", f"{ms / phases['total']:.0%}"] for name, ms in phases.items()
    ]
    rows += [["operator", name, f"{ms:.1f}", f"{share:.0%}"] for name, ms, share in operators]
    print(
        save_table(
            "node_epoch_profile",
            "Scale",
            f"Where a full-batch GRACE epoch's time goes on {data.name}",
            ["kind", "phase or operator", "ms per epoch", "share"],
            rows,
            notes=f"Phases: median over {args.epochs} epochs after {args.warmup} left out, the "
            "method's forward less its two encoder passes as 'head and loss'. Operators: "
            "torch.profiler's self CPU time over 5 epochs, the top ones, their share of all "
            "operators' self time.",
        )
    )


if __name__ == "__main__":
    main()
