"""Exact InfoNCE over the global batch of P processes: loss + backward time and peak memory
per rank for cl2gnn's ``distributed="gather"`` and ``"ring"`` and lightly's
``NTXentLoss(gather_distributed=True)``, side by side (gloo on the CPU, NCCL on CUDA).

    python -m benchmarks.speed.distributed --procs 1 2 4 --views 8192 32768 131072
    python -m benchmarks.speed.distributed --procs 4 --views 131072 --methods ring --merge

Every (method, P, N) runs in fresh processes (so that each rank's peak RSS is its own):
``N`` views in all (``N / 2P`` samples per rank, two views each), ``d`` features, one
warm-up call, then the median of ``--repeats`` timed calls, the slowest rank's. Peak memory
is the rank's peak RSS (or peak CUDA memory) above its baseline after start-up, the largest
over the ranks. P = 1 is one process without a process group (the modes change nothing
there). Configurations whose logits would not fit in ``--budget-gb`` are skipped. torch
loads once the options have passed their checks, so that an argument error answers at once.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import socket
import statistics
import time
from datetime import timedelta

from benchmarks._shared.results import RESULTS_DIR, rss_mb, save_table
from cl2gnn.cli import cmdline

METHODS = ("gather", "ring", "lightly")


def _loss_fn(method: str, distributed: bool):
    if method == "lightly":
        from lightly.loss import NTXentLoss

        return NTXentLoss(temperature=0.5, gather_distributed=distributed)
    from cl2gnn.losses import InfoNCELoss

    return InfoNCELoss(temperature=0.5, distributed=method)


def _worker(rank, world, port, method, views, dim, repeats, device, queue):
    cmdline.quiet_pyg_warning()  # a spawned process: main() has not run here
    import torch
    import torch.distributed as dist

    from cl2gnn.node.evaluation.experiment import peak_rss_mb

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    cuda = device == "cuda"
    if world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        backend = "nccl" if cuda else "gloo"
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=timedelta(hours=1))
    target = torch.device("cuda", rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(target)
    loss_fn = _loss_fn(method, world > 1)
    samples = views // (2 * world)
    generator = torch.Generator().manual_seed(rank)
    z1, z2 = (torch.randn(samples, dim, generator=generator).to(target) for _ in range(2))
    baseline = torch.cuda.memory_allocated(target) / 2**20 if cuda else rss_mb()

    def step():
        a, b = z1.detach().requires_grad_(), z2.detach().requires_grad_()
        loss_fn(a, b).backward()
        if cuda:
            torch.cuda.synchronize(target)

    times = []
    for i in range(repeats + 1):  # the first call warms up
        if world > 1:
            dist.barrier()
        start = time.perf_counter()
        step()
        if i:
            times.append(time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated(target) / 2**20 if cuda else peak_rss_mb()
    queue.put((rank, statistics.median(times), peak - baseline))
    if world > 1:
        dist.destroy_process_group()


def measure(method, world, views, dim, repeats, device) -> tuple[float, float]:
    """``(seconds, peak MB)``: the slowest rank's median time and the largest peak."""
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    queue = context.Queue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = (world, port, method, views, dim, repeats, device, queue)
    processes = [context.Process(target=_worker, args=(r, *args)) for r in range(world)]
    for p in processes:
        p.start()
    results = [queue.get() for _ in processes]
    for p in processes:
        p.join()
    return max(r[1] for r in results), max(r[2] for r in results)


def logits_gb(method: str, world: int, views: int) -> float:
    """What the gathered logits need per process group: ``N/P × N`` float32 per rank, about
    four such matrices alive at once (logits, their exp, the softmax gradient); the ring
    keeps tiles only."""
    if method == "ring":
        return 0.0
    return 4 * 4 * (views / world) * views * world / 2**30


def main() -> None:
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=cmdline.positive_int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--views", type=cmdline.positive_int, nargs="+", default=[8192, 32768, 131072]
    )
    parser.add_argument("--dim", type=cmdline.positive_int, default=128)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--repeats", type=cmdline.positive_int, default=3)
    parser.add_argument("--budget-gb", type=cmdline.positive_float, default=16.0)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--name", default="distributed_infonce", help="results file name")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the rows of the results file that this run does not measure again",
    )
    args = parser.parse_args()
    check(parser, args)
    with cmdline.user_errors(parser.prog):
        run(args)


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before torch loads, what the options' types cannot see alone."""
    for views in args.views:
        for world in args.procs:
            if views % (2 * world):
                parser.error(
                    f"argument --views: {views} views do not split into two views of "
                    f"equal samples on each of --procs {world} (a multiple of {2 * world})"
                )
    if not re.fullmatch(r"[\w.-]+", args.name):
        parser.error(f"argument --name: a file name (letters, digits, _ . -), got {args.name!r}")
    if "lightly" in args.methods and importlib.util.find_spec("lightly") is None:
        parser.error("argument --methods: lightly is not installed (pip install lightly)")


def kept_rows(path) -> list[list]:
    """The rows of the results file ``path`` (``--merge``), read before any measurement so
    that a file that is not such a table fails at once (``ValueError`` naming it)."""
    try:
        rows = json.loads(path.read_text())["rows"]
        return [row for row in rows if row[2] in METHODS and len(row) == 5]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise ValueError(f"{path}: cannot merge its rows (--merge): {error!r}") from None


def merged(kept: list[list], rows: list[list]) -> list[list]:
    """``rows`` with the ``kept`` rows that they do not measure again (same N, P, method)."""
    measured_now = {tuple(row[:3]) for row in rows}
    return sorted(
        [row for row in kept if tuple(row[:3]) not in measured_now] + rows,
        key=lambda row: (row[0], row[1], METHODS.index(row[2])),
    )


def run(args: argparse.Namespace) -> None:
    cmdline.check_device(args.device)
    results = RESULTS_DIR / f"{args.name}.json"
    kept = kept_rows(results) if args.merge and results.exists() else []
    if args.device == "cuda":  # rank r runs on cuda:r
        import torch

        if torch.cuda.device_count() < max(args.procs):
            raise ValueError(
                f"argument --procs: {max(args.procs)} processes need as many CUDA devices, "
                f"this machine has {torch.cuda.device_count()}"
            )
    rows = []
    for views in args.views:
        for world in args.procs:
            measured = {}
            for method in args.methods:
                if logits_gb(method, world, views) > args.budget_gb:
                    print(f"N={views} P={world} {method}: skipped (over --budget-gb)")
                    continue
                seconds, peak = measure(method, world, views, args.dim, args.repeats, args.device)
                measured[method] = seconds
                print(f"N={views} P={world} {method}: {seconds:.3f} s, peak +{peak:.0f} MB")
                rows.append([views, world, method, round(seconds, 3), round(peak)])
            if "ring" in measured and "gather" in measured:
                ratio = measured["ring"] / measured["gather"]
                print(f"N={views} P={world}: ring / gather = {ratio:.2f}")
    if args.merge:
        rows = merged(kept, rows)
    save_table(
        args.name,
        "Speed",
        "Exact InfoNCE across processes: loss + backward",
        ["views N", "processes P", "method", "seconds (slowest rank)", "peak MB per rank"],
        rows,
        device=args.device,
        notes=(
            f"d = {args.dim}; N/P views per rank; median of {args.repeats} calls after a "
            "warm-up; peak = the largest rank's peak RSS above its start-up RSS (CUDA: peak "
            "allocated memory). `lightly` is lightly's NTXentLoss(gather_distributed=True). "
            "P processes share the machine's cores (torch threads = cores / P)."
        ),
    )


if __name__ == "__main__":
    main()
