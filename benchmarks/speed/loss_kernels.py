"""Where the exact loss's time goes, one kernel at a time.

    python -m benchmarks.speed.loss_kernels gemm --n 5416 --dim 128 --tile 1024
    python -m benchmarks.speed.loss_kernels saved --n 5416 --dim 128 --tau 0.4
    python -m benchmarks.speed.loss_kernels keys --n 5416 --dim 128 --tau 0.4 --keys 64 256 1024
    python -m benchmarks.speed.loss_kernels spectral --n 5416 --dim 128
    python -m benchmarks.speed.loss_kernels compiled --n 5416 --dim 128 --tau 0.4

``gemm``: the tiled loss's inner product (a ``tile × d`` by ``d × n`` product) in float32,
float32 with the tiles' opt-in bfloat16 products (``matmul_dtype``) and
bfloat16. ``saved``: the tiled log-partition's forward + backward with its ``exp`` blocks kept
for the backward against recomputed, alternating in rounds (best and median). ``keys``:
InfoNCE forward + backward over ``n`` views with ``num_keys`` sampled uniformity keys against
the exact loss, alternating in rounds. ``spectral``: the spectral contrastive loss's forward
+ backward. ``compiled``: the tiled log-partition's forward + backward (unit rows, as the loss
calls it) eager against ``torch.compile(fullgraph=True)`` (inductor), which fuses the tile
loop's elementwise passes into C++ kernels: does the fusion pay on the CPU?
Each prints a Markdown table (``--json``: the rows; ``--save NAME``: the results
page's table).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from benchmarks._shared.operators import (
    DIM,
    Table,
    best_median,
    best_median_ms,
    output,
    output_arguments,
    two_views,
)
from cl2gnn.cli import cmdline

if TYPE_CHECKING:
    pass


def run_gemm(n: int, d: int, tile: int, repeats: int = 20) -> list[dict]:
    """The tiled loss's inner product ``tile × d @ d × n`` in fp32, in bf16, and on fp32 rows
    with the tiles' opt-in bf16 products (``matmul_dtype="bfloat16"``: oneDNN's, fp32 out)."""
    import torch

    from cl2gnn.nn import tiled

    rows = []
    for dtype, matmul_dtype in (
        (torch.float32, None),
        (torch.bfloat16, None),
        (torch.float32, "bfloat16"),
    ):
        a, b = torch.randn(tile, d, dtype=dtype), torch.randn(d, n, dtype=dtype)
        out = torch.empty(tile, n, dtype=dtype)
        with tiled._products_in(matmul_dtype, a):
            torch.mm(a, b, out=out)
            start = time.perf_counter()
            for _ in range(repeats):
                torch.mm(a, b, out=out)
            seconds = (time.perf_counter() - start) / repeats
        label = str(dtype) + (f", {matmul_dtype} products" if matmul_dtype else "")
        rows.append(
            {"dtype": label, "ms": 1000 * seconds, "gmacs_per_s": tile * d * n / seconds / 1e9}
        )
    return rows


def run_saved(n: int, d: int, tau: float, rounds: int = 3, repeats: int = 15) -> list[dict]:
    import torch
    import torch.nn.functional as F

    from cl2gnn.nn import tiled

    budget = tiled.SAVED_BLOCKS_MAX_BYTES
    generator = torch.Generator().manual_seed(0)
    x = F.normalize(torch.randn(n, d, generator=generator), dim=1).requires_grad_(True)
    rows = []
    try:
        for round_ in range(rounds):
            for saved in (True, False):
                tiled.SAVED_BLOCKS_MAX_BYTES = budget if saved else 0
                timing = best_median_ms(
                    lambda: tiled.tiled_row_logsumexp(x, tau).sum().backward(), repeats
                )
                rows.append({"round": round_, "saved": saved, **timing})
    finally:
        tiled.SAVED_BLOCKS_MAX_BYTES = budget
    return rows


def run_keys(n: int, d: int, tau: float, keys, rounds: int = 3, repeats: int = 12) -> list:
    """``info_nce`` forward + backward with each ``num_keys`` (``None``: exact, tiled)."""
    from cl2gnn.losses import info_nce

    z1, z2 = two_views(n, d)
    return [
        {
            "round": round_,
            "num_keys": k,
            **best_median_ms(
                lambda k=k: info_nce(z1, z2, temperature=tau, num_keys=k).backward(), repeats
            ),
        }
        for round_ in range(rounds)
        for k in [*keys, None]
    ]


def run_spectral(n: int, d: int, rounds: int = 3, repeats: int = 15) -> list:
    """``SpectralContrastiveLoss`` forward + backward on two views of ``n / 2`` rows (time
    the code on ``PYTHONPATH`` against another checkout by running both in turn)."""
    from cl2gnn.losses import SpectralContrastiveLoss

    z1, z2 = two_views(n, d)
    loss = SpectralContrastiveLoss()
    return [
        {"round": r, **best_median_ms(lambda: loss(z1, z2).backward(), repeats)}
        for r in range(rounds)
    ]


def run_compiled(n: int, d: int, tau: float, rounds: int = 3, repeats: int = 9) -> list:
    """The tiled log-partition's forward + backward, eager and compiled, alternating; the
    compiled one's first call (its compilation) and its fused kernels recorded too."""
    import re

    import torch
    import torch.nn.functional as F
    from torch._inductor.utils import run_and_get_code

    from cl2gnn.nn.tiled import rows_within, tiled_row_logsumexp

    generator = torch.Generator().manual_seed(0)
    x = F.normalize(torch.randn(n, d, generator=generator), dim=1).requires_grad_(True)
    weight = torch.rand(n, generator=generator)

    def forward():
        with rows_within(1.0 + 1e-3):  # unit rows, as info_nce tells the tiles
            return (tiled_row_logsumexp(x, tau) * weight).sum()

    compiled = torch.compile(forward, fullgraph=True)
    start = time.perf_counter()
    _, code = run_and_get_code(lambda: compiled().backward())
    first = time.perf_counter() - start
    kernels = sorted(set(re.findall(r"cpp_fused_\w+", "\n".join(code))))
    label = f"first call: the compilation, {len(kernels)} fused C++ kernels"
    rows = [{"round": label, "form": "compiled", "best_ms": 1000 * first,
             "median_ms": 1000 * first, "kernels": kernels}]  # fmt: skip
    for round_ in range(rounds):
        for form, step in (("eager", forward), ("compiled", compiled)):
            timing = best_median_ms(lambda step=step: step().backward(), repeats)
            rows.append({"round": str(round_), "form": form, **timing})
    return rows


TITLES = {
    "gemm": "The tiled loss's inner product",
    "saved": "Tiled log-partition: exp blocks saved against recomputed",
    "keys": "InfoNCE with sampled uniformity keys against the exact loss",
    "spectral": "Spectral contrastive loss, forward + backward",
    "compiled": "The tile loop eager against torch.compile (inductor's fused elementwise kernels)",
}


def table(args, rows) -> Table:
    if args.bench == "gemm":
        columns = ["dtype", "ms per GEMM", "G multiply-adds/s"]
        return columns, [[r["dtype"], f"{r['ms']:.2f}", f"{r['gmacs_per_s']:.0f}"] for r in rows]
    if args.bench == "saved":
        cells = [
            [str(r["round"]), "saved" if r["saved"] else "recomputed", *best_median(r)]
            for r in rows
        ]
        return ["round", "exp blocks", "best ms", "median ms"], cells
    if args.bench == "keys":
        cells = [
            [str(r["round"]), str(r["num_keys"] or f"all {args.n} (exact)"), *best_median(r)]
            for r in rows
        ]
        return ["round", "uniformity keys", "best ms", "median ms"], cells
    if args.bench == "compiled":
        cells = [[r["round"], r["form"], *best_median(r)] for r in rows]
        return ["round", "form", "best ms", "median ms"], cells
    return ["round", "best ms", "median ms"], [[str(r["round"]), *best_median(r)] for r in rows]


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    views = cmdline.int_range(2)  # two views of N / 2 samples
    p = sub.add_parser("gemm")
    p.add_argument("--n", type=cmdline.positive_int, default=5416)
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--tile", type=cmdline.positive_int, default=1024)
    p = sub.add_parser("saved")
    p.add_argument("--n", type=cmdline.positive_int, default=5416)
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--tau", type=cmdline.positive_float, default=0.4)
    p.add_argument("--rounds", type=cmdline.positive_int, default=3)
    p = sub.add_parser("keys")
    p.add_argument("--n", type=views, default=5416)
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--tau", type=cmdline.positive_float, default=0.4)
    p.add_argument("--keys", type=cmdline.positive_int, nargs="+", default=[64, 256, 1024])
    p.add_argument("--rounds", type=cmdline.positive_int, default=3)
    p = sub.add_parser("compiled")
    p.add_argument("--n", type=cmdline.positive_int, default=5416)
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--tau", type=cmdline.positive_float, default=0.4)
    p.add_argument("--rounds", type=cmdline.positive_int, default=3)
    p = sub.add_parser("spectral")
    p.add_argument("--n", type=views, default=5416)
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--rounds", type=cmdline.positive_int, default=3)
    for p in sub.choices.values():
        output_arguments(p)
    args = parser.parse_args()
    rows = 2 * (getattr(args, "n", 0) // 2)  # the two views' rows: --n rounded down to even
    if args.bench == "keys" and max(args.keys) >= rows:
        sub.choices["keys"].error(
            f"argument --keys: each must be below the {rows} rows of --n {args.n} (all of "
            f"them is the exact loss, timed anyway), got {max(args.keys)}"
        )
    with cmdline.user_errors(sub.choices[args.bench].prog):
        import torch

        torch.set_grad_enabled(True)
        if args.bench == "gemm":
            rows = run_gemm(args.n, args.dim, args.tile)
        elif args.bench == "saved":
            rows = run_saved(args.n, args.dim, args.tau, args.rounds)
        elif args.bench == "keys":
            rows = run_keys(args.n, args.dim, args.tau, args.keys, args.rounds)
        elif args.bench == "compiled":
            rows = run_compiled(args.n, args.dim, args.tau, args.rounds)
        else:
            rows = run_spectral(args.n, args.dim, args.rounds)
        output(args, rows, table(args, rows), "Speed", TITLES[args.bench])


if __name__ == "__main__":
    main()
