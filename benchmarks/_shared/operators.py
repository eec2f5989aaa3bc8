"""What the loss and kNN benchmarks share: random views, wall times (best and median of
repeated calls, a device's queue drained), GRACE's chunked loss (a peer the exact loss is
timed against) and a table's output: printed in Markdown, ``--json`` rows, ``--save NAME``
the results page's ``results/NAME.json``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cl2gnn.cli import cmdline

if TYPE_CHECKING:
    import torch

Table = tuple[list[str], list[list[str]]]  # columns, rows of cells
DIM = 128
TAU = 0.5


def grace_chunked_loss(z1: torch.Tensor, z2: torch.Tensor, tau: float, chunk: int = 1024):
    """The "batched" GRACE loss: anchors in chunks, but autograd keeps every chunk's
    exp-similarity matrices, so backward still holds O(N²) memory."""
    import torch
    import torch.nn.functional as F

    z1, z2 = F.normalize(z1, dim=1), F.normalize(z2, dim=1)

    def semi(a, b):
        n, losses = a.size(0), []
        for start in range(0, n, chunk):
            idx = slice(start, min(start + chunk, n))
            refl = torch.exp(a[idx] @ a.T / tau)
            between = torch.exp(a[idx] @ b.T / tau)
            rows = torch.arange(idx.stop - idx.start)
            pos = between[rows, rows + start]
            own = refl[rows, rows + start]
            losses.append(-torch.log(pos / (refl.sum(1) + between.sum(1) - own)))
        return torch.cat(losses)

    return 0.5 * (semi(z1, z2) + semi(z2, z1)).mean()


def two_views(n: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(n // 2, d, generator=generator).requires_grad_(True) for _ in "ab")


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


def timed_on(device: torch.device, fn, *args, **kwargs):
    """``fn``'s result and its wall time, with the device's queue drained on both ends."""
    sync(device)
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    sync(device)
    return out, time.perf_counter() - start


def best_median_ms(step, repeats: int) -> dict:
    """Best and median wall time of ``step()`` over ``repeats`` calls after a warm-up."""
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        step()
        times.append(1000 * (time.perf_counter() - start))
    times = sorted(times[1:])
    return {"best_ms": times[0], "median_ms": times[len(times) // 2]}


def best_median(row: dict) -> list[str]:
    return [f"{row['best_ms']:.1f}", f"{row['median_ms']:.1f}"]


def markdown_table(columns: list[str], cells: list[list[str]]) -> str:
    lines = [columns, ["---"] * len(columns), *cells]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def output_arguments(parser) -> None:
    parser.add_argument("--json", type=cmdline.output_file, help="the rows, as JSON")
    parser.add_argument(
        "--save",
        metavar="NAME",
        type=cmdline.file_stem,
        help="also write the table to benchmarks/results/NAME.json (the results page)",
    )


def output(args, rows, table: Table, topic: str, title: str, device: str = "cpu") -> None:
    """Print the table; write the rows to ``--json`` (whole or not at all) and the table to
    the results page's ``--save``."""
    columns, cells = table
    print(markdown_table(columns, cells))
    if args.json:
        partial = Path(f"{args.json}.partial")
        partial.write_text(json.dumps(rows, indent=1))
        os.replace(partial, args.json)
    if args.save:
        from benchmarks._shared.results import save_table

        print(save_table(args.save, topic, title, columns, cells, device=device))
