"""Where a full-batch epoch's time goes: each phase of :meth:`FullBatchTrainer.step`, timed
around the trainer's own calls while the real step runs (median over the epochs, the first
``--warmup`` left out), and the operators that take the most time (``torch.profiler``, per
epoch), for a graph's default GRACE-scheme configuration.

The phases are timed by wrapping, on the trainer's instances only, the calls the step makes:
``view_input`` (a view's augmentation, less its propagation graph), the propagation graph
(``graphs.kept``), the encoder's passes (``encoder.encode``, the built-in encoder's training
path), the method's forward (``model.forward``, less the encoder's passes: "head and loss"),
``optimise`` (less the optimiser's step: "backward", with ``zero_grad`` and the method's
``after_step``) and ``optimizer.step``; "other" is the rest of the step, "total" the whole
``trainer.step()``. Nothing is run twice, nothing copied from the trainer.

The floor, for a float32 epoch: its matrix products (``mm``, ``addmm``, ``addmm_``, found by
the profiler with their shapes) replayed alone, back to back on fresh float32 tensors of the
same shapes, give the time BLAS needs for them on this machine; an epoch of the same run
with the loss replaced by the sum of the projections (the views, encoder, head, backward
through them and the optimiser, as before) gives what is not the loss. What is left above
both is the loss's passes over its ``2N × 2N`` logits besides their products.

    python -m benchmarks.speed.epoch_profile --dataset Cora   # -> results/node_epoch_profile.json
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import time
from collections import defaultdict

from torch.profiler import ProfilerActivity, profile

from benchmarks._shared.floors import without_the_loss
from benchmarks._shared.results import save_table
from cl2gnn.cli import cmdline, node_arguments

PHASES = ("augment", "propagation graphs", "encoder, both views", "head and loss")
PHASES += ("backward", "optimiser", "other", "total")
# the calls timed, as (phase key, object, attribute): each wrapped on that instance
CALLS = (
    ("view_input", "trainer", "view_input"),
    ("propagation", "graphs", "kept"),
    ("encoder", "encoder", "encode"),
    ("method", "model", "forward"),
    ("optimise", "trainer", "optimise"),
    ("optimiser", "optimizer", "step"),
)


@contextlib.contextmanager
def timing(trainer, spent: dict[str, float]):
    """While open, each call of :data:`CALLS` adds its wall time (seconds) to
    ``spent[key]``; the trainer's own methods are restored on leaving."""
    owners = {
        "trainer": trainer,
        "graphs": trainer.graphs,
        "encoder": trainer.encoder,
        "model": trainer.model,
        "optimizer": trainer.optimizer,
    }
    wrapped = []

    def timed(key, call):
        @functools.wraps(call)
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start

        return wrapper

    try:
        for key, owner, attribute in CALLS:
            target = owners[owner]
            setattr(target, attribute, timed(key, getattr(target, attribute)))
            wrapped.append((target, attribute))
        yield
    finally:
        for target, attribute in wrapped:  # the class's method again
            target.__dict__.pop(attribute, None)


def phase_times(trainer, epochs: int, warmup: int) -> dict[str, float]:
    """Median ms of each phase of :meth:`FullBatchTrainer.step`, timed inside the real step."""
    if not trainer.builtin:
        raise ValueError("the phases are those of the built-in encoder's training path")
    times = {phase: [] for phase in PHASES}
    for epoch in range(epochs + warmup):
        spent = defaultdict(float)
        with timing(trainer, spent):
            start = time.perf_counter()
            trainer.step()
            total = time.perf_counter() - start
        if epoch < warmup:
            continue
        step = [
            spent["view_input"] - spent["propagation"],
            spent["propagation"],
            spent["encoder"],
            spent["method"] - spent["encoder"],
            spent["optimise"] - spent["optimiser"],
            spent["optimiser"],
        ]
        step += [total - spent["view_input"] - spent["method"] - spent["optimise"], total]
        for phase, seconds in zip(PHASES, step, strict=True):
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


GEMMS = ("aten::mm", "aten::addmm", "aten::addmm_")
SPARSE_READS = ("aten::_nnz", "aten::crow_indices", "aten::col_indices", "aten::indices")


def replayed_ms(name: str, shapes: list[list[int]], repeats: int = 10) -> float:
    """Median ms of one float32 ``name`` call with operands of ``shapes`` alone."""
    import torch

    # mm(a, b); addmm(c, a, b) and c.addmm_(a, b): the product's operands come second; an
    # mm(a, b, out=c) lists its output third, replayed into one
    operands = [torch.randn(shape) for shape in shapes if shape]
    call = {
        "aten::mm": lambda a, b, *out: torch.mm(a, b, out=out[0] if out else None),
        "aten::addmm": lambda c, a, b: torch.addmm(c, a, b),
        "aten::addmm_": lambda c, a, b: c.addmm_(a, b),
    }[name]
    call = functools.partial(call, *operands)
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def dense_products(events) -> list:
    """The profiled dense matrix products: :data:`GEMMS` calls with no product inside them
    and none around them, and no sparse operand (a sparse operator around the call, or its
    index reads inside it)."""

    def inside_another(event) -> bool:
        around = event.cpu_parent
        while around is not None:
            if around.name in GEMMS or "sparse" in around.name:
                return True
            around = around.cpu_parent
        return False

    def holds(event, names) -> bool:
        return any(c.name in names or holds(c, names) for c in event.cpu_children)

    return [
        e
        for e in events
        if e.name in GEMMS
        and not inside_another(e)
        and not holds(e, GEMMS)
        and not holds(e, SPARSE_READS)
    ]


def gemm_floor(trainer, epochs: int) -> tuple[float, float]:
    """The epoch's dense matrix products: (their self time in the epoch, the same products
    replayed alone), ms per epoch."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(epochs):
            trainer.step()
    groups = defaultdict(list)
    for event in dense_products(prof.events()):
        groups[event.name, str(event.input_shapes)].append(event)
    in_epoch = replayed = 0.0
    for (name, _), events in groups.items():
        in_epoch += sum(e.self_cpu_time_total for e in events) / 1000
        replayed += len(events) * replayed_ms(name, events[0].input_shapes)
    return in_epoch / epochs, replayed / epochs


def epoch_ms(trainer, epochs: int, warmup: int) -> float:
    """Median ms of ``trainer.step()``."""
    times = []
    for epoch in range(epochs + warmup):
        start = time.perf_counter()
        trainer.step()
        if epoch >= warmup:
            times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    from cl2gnn.node import default_config, load_node_dataset
    from cl2gnn.node.training.fullbatch import FullBatchTrainer

    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=node_arguments.dataset_argument, default="Cora")
    parser.add_argument("--epochs", type=cmdline.positive_int, default=20)
    parser.add_argument("--warmup", type=cmdline.non_negative_int, default=5)
    parser.add_argument("--top", type=cmdline.positive_int, default=10)
    args = parser.parse_args()
    with cmdline.user_errors(parser.prog):
        data = load_node_dataset(args.dataset)
        config = default_config(data, "grace", graph=data.name)
        trainer = FullBatchTrainer(data, "grace", config, seed=0)
        phases = phase_times(trainer, args.epochs, args.warmup)
        operators = top_operators(trainer, 5, args.top)
        gemms, replayed = gemm_floor(trainer, 5)
        no_loss = FullBatchTrainer(data, "grace", config, seed=0)
        without_the_loss(no_loss.method)
        rest = epoch_ms(no_loss, args.epochs, args.warmup)
        _, rest_replayed = gemm_floor(no_loss, 5)
    rows = [
        ["phase", name, f"{ms:.1f}", f"{ms / phases['total']:.0%}"] for name, ms in phases.items()
    ]
    rows += [["operator", name, f"{ms:.1f}", f"{share:.0%}"] for name, ms, share in operators]
    total = phases["total"]
    floor = [
        ("matrix products, in the epoch", gemms),
        ("matrix products, replayed alone", replayed),
        ("epoch with the loss replaced by a sum", rest),
        ("the loss's products replayed alone", replayed - rest_replayed),
        ("floor: the two above", rest + replayed - rest_replayed),
    ]
    rows += [["floor", name, f"{ms:.1f}", f"{ms / total:.0%}"] for name, ms in floor]
    print(
        save_table(
            "node_epoch_profile",
            "Speed",
            f"Where a full-batch GRACE epoch's time goes on {data.name}",
            ["kind", "phase or operator", "ms per epoch", "share"],
            rows,
            notes=f"Phases: median over {args.epochs} epochs after {args.warmup} left out, timed "
            "around the trainer's own calls inside FullBatchTrainer.step (the method's forward "
            "less its two encoder passes as 'head and loss', the optimise call less the "
            "optimiser's step as 'backward'). Operators: "
            "torch.profiler's self CPU time over 5 epochs, the top ones, their share of all "
            "operators' self time. Floor (float32 epochs): the epoch's mm, addmm and addmm_ "
            "calls by shape, their profiled self time per epoch, and the same calls replayed "
            "alone on fresh float32 tensors (median of 10 each, times their count): BLAS's "
            "time for them on this machine; then an epoch of the same run with the loss "
            "replaced by the sum of the projections (median, as the phases); the loss's products "
            "are the replayed products of the epoch less those of that epoch.",
        )
    )


if __name__ == "__main__":
    main()
