"""How the exact InfoNCE loss scales against the forms its peers use, in time and memory.

    python -m benchmarks.speed.infonce_scale infonce --sizes 2048 4096 8192 16384 32768 65536
    python -m benchmarks.speed.infonce_scale scale --sizes 65536 262144 1048576 --dtype bfloat16
    python -m benchmarks.speed.infonce_scale crossover --sizes 256 512 1024 2048 4096 --device cpu

``infonce``: InfoNCE (two views of ``N/2`` samples, ``d = 128``) forward + backward for the
dense form, a GRACE-style chunked form (chunked forward, but autograd keeps every chunk's
``N × chunk`` temporaries) and cl2gnn's tiled form. Every (implementation, N) runs in a
fresh process, so that its peak RSS is its own; the dense/chunked runs are skipped where
their ``O(N²)`` temporaries would not fit. ``scale`` (for a GPU): the log-partition's forward
+ backward at large N for the torch tiled and the Triton implementations, peak device memory,
and the multiply-add rate against the same device's square-GEMM rate in the same dtype (the
roofline). ``crossover``: where the exact forms cross, on the device it runs on: the
uniformity energy's forward + backward over ``N`` float32 unit rows for each form (dense,
torch tiles, the tiles' bfloat16 products, Triton), best of ``--repeats``; the rule of
``implementation="auto"`` (``cl2gnn.nn._dispatch``) should name the fastest. Every table
shows auto's choice beside the forms' times. Each prints a Markdown table (``--json``: the
rows; ``--save NAME``: the results page's table). torch loads once the options have passed
their checks.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from benchmarks._shared.operators import (
    DIM,
    TAU,
    Table,
    grace_chunked_loss,
    output,
    output_arguments,
    sync,
    two_views,
)
from benchmarks._shared.results import ROOT, module_of, rss_mb
from cl2gnn.cli import cmdline

if TYPE_CHECKING:
    import torch

IMPLS = ("tiled", "triton")  # the log-partition's implementations that ``scale`` compares
# the forms that ``crossover`` times: (implementation, matmul_dtype) of UniformAttention
FORMS = {
    "dense": ("dense", None),
    "tiled": ("tiled", None),
    "tiled-bf16": ("tiled", "bfloat16"),
    "triton": ("triton", None),
}
TITLES = {
    "infonce": "Exact InfoNCE at scale: dense vs GRACE-chunked vs tiled (forward + backward)",
    "scale": "Exact log-partition at scale on one GPU: Triton against torch tiled",
    "crossover": "Exact forms of the {computation} against N, and auto's choice",
}


def auto_choice(
    n: int, dim: int, device: str, computation: str = "log-partition", dtype: str = "float32"
) -> str:
    """The form ``implementation="auto"`` takes for ``n`` rows (the library's rule)."""
    import torch

    from cl2gnn.nn._dispatch import exact_form

    return exact_form(n, dim, torch.device(device), getattr(torch, dtype), computation=computation)


def infonce_worker(impl: str, n: int, repeats: int) -> dict:
    from cl2gnn.losses import info_nce
    from cl2gnn.node.evaluation.experiment import peak_rss_mb

    z1, z2 = two_views(n, DIM)
    if impl in ("dense", "tiled"):

        def loss_fn():
            return info_nce(z1, z2, temperature=TAU, implementation=impl)
    else:

        def loss_fn():
            return grace_chunked_loss(z1, z2, TAU)

    base = rss_mb()
    times = []
    for _ in range(repeats + 1):  # the first run pays one-off costs
        start = time.perf_counter()
        loss_fn().backward()
        times.append(time.perf_counter() - start)
    return {
        "impl": impl,
        "n": n,
        "seconds": min(times[1:]) if repeats else times[0],
        "peak_rss_mb": peak_rss_mb(),
        "baseline_rss_mb": base,
    }


def fits(impl: str, n: int, budget_gb: float) -> bool:
    """Would the O(N²) temporaries of a dense/chunked run fit? (about 6 float32 N×N)"""
    return impl == "tiled" or 6 * 4 * n * n / 2**30 < budget_gb


def run_infonce(sizes, repeats: int, budget_gb: float) -> list[dict]:
    rows = []
    for n in sizes:
        for impl in ("dense", "grace-chunked", "tiled"):
            if not fits(impl, n, budget_gb):
                rows.append({"impl": impl, "n": n, "skipped": "O(N²) does not fit"})
                continue
            code = [
                sys.executable,
                "-W",
                "ignore",
                "-m",
                module_of(__file__),
                "_infonce",
                impl,
                str(n),
                str(repeats),
            ]
            out = subprocess.run(code, capture_output=True, text=True, check=True, cwd=ROOT).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def infonce_table(rows: list[dict]) -> Table:
    columns = ["N views", "dense s", "dense peak RSS MB", "GRACE-chunked s", "chunked peak MB"]
    columns += ["tiled s", "tiled peak MB", "tiled / dense time", "auto"]
    lines = []
    for n in sorted({r["n"] for r in rows}):
        by = {r["impl"]: r for r in rows if r["n"] == n}
        cells = []
        for impl in ("dense", "grace-chunked", "tiled"):
            r = by[impl]
            cells += (
                ["—", "—"] if "skipped" in r else [f"{r['seconds']:.3f}", f"{r['peak_rss_mb']:.0f}"]
            )
        ratio = (
            f"{by['tiled']['seconds'] / by['dense']['seconds']:.2f}"
            if "skipped" not in by["dense"]
            else "—"
        )
        lines.append([str(n), *cells, ratio, auto_choice(n, DIM, "cpu")])
    return columns, lines


def gemm_rate(device: torch.device, dtype: torch.dtype, size: int = 8192) -> float:
    """Multiply-adds per second of a square ``size³`` GEMM: the roofline of the loss."""
    import torch

    a = torch.randn(size, size, device=device, dtype=dtype)
    torch.mm(a, a)
    sync(device)
    start = time.perf_counter()
    for _ in range(5):
        torch.mm(a, a)
    sync(device)
    return 5 * size**3 / (time.perf_counter() - start)


def run_scale(sizes, dim: int, dtype: str, impls, tile: int, device: str) -> list[dict]:
    import torch
    import torch.nn.functional as F

    from cl2gnn.nn import tiled
    from cl2gnn.nn.tiled_triton import triton_row_logsumexp

    device, dtype = torch.device(device), getattr(torch, dtype)
    roofline = gemm_rate(device, dtype, 8192 if device.type == "cuda" else 1024)
    rows = []
    for n in sizes:
        x = F.normalize(torch.randn(n, dim, device=device), dim=1).to(dtype).requires_grad_(True)
        for impl in impls:
            if impl == "triton":
                fn = triton_row_logsumexp
                macs = 3 * n * n * dim  # forward N²d, backward 2N²d (no symmetric halving)
            else:
                fn = functools.partial(tiled.tiled_row_logsumexp, tile_size=tile)
                saved = tiled._block_bytes(n, tile, torch.float32) <= tiled.SAVED_BLOCKS_MAX_BYTES
                macs = (1.5 if saved else 2.0) * n * n * dim
            fn(x, TAU).float().sum().backward()  # compiles the kernels / warms the allocator
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            sync(device)
            start = time.perf_counter()
            fn(x, TAU).float().sum().backward()
            sync(device)
            seconds = time.perf_counter() - start
            peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
            rows.append(
                {
                    "impl": impl,
                    "n": n,
                    "seconds": seconds,
                    "peak_mb": peak / 2**20,
                    "tmacs_per_s": macs / seconds / 1e12,
                    "roofline_fraction": macs / seconds / roofline,
                    "gemm_tmacs_per_s": roofline / 1e12,
                    "device": torch.cuda.get_device_name(device)
                    if device.type == "cuda"
                    else "cpu",
                    "dtype": str(dtype),
                    "auto": auto_choice(
                        n, dim, str(device), dtype=str(dtype).removeprefix("torch.")
                    ),
                }
            )
            print(rows[-1], file=sys.stderr, flush=True)
            x.grad = None
    return rows


def scale_cells(row: dict) -> list[str]:
    rate = [f"{row['tmacs_per_s']:.1f}", f"{row['roofline_fraction']:.0%}"]
    timing = [f"{row['seconds']:.2f}", f"{row['peak_mb']:.0f}"]
    return [row["impl"], str(row["n"]), row["dtype"], *timing, *rate, row["auto"]]


def crossover_step(computation: str, implementation: str, matmul_dtype: str | None, dim: int):
    """One forward + backward of ``computation`` on rows ``x`` in the given form."""
    from cl2gnn.nn import ContrastiveNorm, UniformAttention

    if computation == "attention":  # ContrastiveNorm's softmax attention, the step alone
        norm = ContrastiveNorm(dim, implementation=implementation, norm=None)
        return lambda x: norm(x).square().sum().backward()
    op = UniformAttention(temperature=TAU, implementation=implementation, matmul_dtype=matmul_dtype)
    return lambda x: op.energy(x).backward()


def run_crossover(
    sizes, dim: int, forms, repeats: int, budget_gb: float, device: str, computation: str
) -> list:
    """Best wall time of the computation's forward + backward per (N, form)."""
    import torch
    import torch.nn.functional as F

    from cl2gnn.nn._dispatch import dense_bytes

    device = torch.device(device)
    generator = torch.Generator().manual_seed(0)
    rows = []
    for n in sizes:
        x = F.normalize(torch.randn(n, dim, generator=generator), dim=1).to(device)
        x.requires_grad_(True)
        for name in forms:
            if name == "dense" and dense_bytes(n, torch.float32) > budget_gb * 2**30:
                rows.append({"n": n, "form": name, "skipped": "O(N²) does not fit"})
                continue
            step = crossover_step(computation, *FORMS[name], dim)
            times = []
            for _ in range(repeats + 1):  # the first run pays one-off costs (and tuning)
                sync(device)
                start = time.perf_counter()
                step(x)
                sync(device)
                times.append(time.perf_counter() - start)
            x.grad = None
            best = min(times[1:]) if repeats else times[0]
            rows.append({"n": n, "form": name, "ms": 1000 * best, "device": str(device)})
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def crossover_table(rows: list[dict], forms, dim: int, device: str, computation: str) -> Table:
    columns = ["N", *(f"{name} ms" for name in forms), "fastest", "auto"]
    lines = []
    for n in sorted({r["n"] for r in rows}):
        by = {r["form"]: r for r in rows if r["n"] == n}
        timed = {name: by[name]["ms"] for name in forms if "ms" in by[name]}
        cells = [f"{timed[name]:.1f}" if name in timed else "—" for name in forms]
        fastest = min(timed, key=timed.get) if timed else "—"
        lines.append([str(n), *cells, fastest, auto_choice(n, dim, device, computation)])
    return columns, lines


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_infonce":  # one measuring process
        impl, n, repeats = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(infonce_worker(impl, n, repeats)))
        return
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    views = cmdline.int_range(2)  # two views of N / 2 samples
    p = sub.add_parser("infonce")
    p.add_argument(
        "--sizes", type=views, nargs="+", default=[2048, 4096, 8192, 16384, 32768, 65536]
    )
    p.add_argument("--repeats", type=cmdline.non_negative_int, default=2, help="after a warm-up")
    p.add_argument("--budget-gb", type=cmdline.positive_float, default=16.0)
    p = sub.add_parser("scale")
    p.add_argument(
        "--sizes", type=cmdline.positive_int, nargs="+", default=[65536, 262144, 1048576]
    )
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS))
    p.add_argument("--tile", type=cmdline.positive_int, default=8192)
    p.add_argument("--device", type=cmdline.device, default="cuda")
    p = sub.add_parser("crossover")
    p.add_argument(
        "--sizes", type=cmdline.int_range(2), nargs="+", default=[256, 512, 1024, 2048, 4096]
    )
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--forms", nargs="+", choices=list(FORMS), default=["dense", "tiled"])
    p.add_argument("--computation", choices=["log-partition", "attention"], default="log-partition")
    p.add_argument("--repeats", type=cmdline.non_negative_int, default=3, help="after a warm-up")
    p.add_argument("--budget-gb", type=cmdline.positive_float, default=4.0)
    p.add_argument("--device", type=cmdline.device, default="cpu")
    for p in sub.choices.values():
        output_arguments(p)
    args = parser.parse_args()
    parser = sub.choices[args.bench]
    chosen = {"scale": "impls", "crossover": "forms"}.get(args.bench)
    if chosen and "triton" in getattr(args, chosen):
        if importlib.util.find_spec("triton") is None:
            parser.error(f"argument --{chosen}: triton is not installed")
        if not args.device.startswith("cuda") and os.environ.get("TRITON_INTERPRET") != "1":
            parser.error(f"argument --{chosen}: triton needs --device cuda (or TRITON_INTERPRET=1)")
    if args.bench == "crossover" and "tiled-bf16" in args.forms and args.device != "cpu":
        parser.error("argument --forms: tiled-bf16 (oneDNN's bf16 GEMM) needs --device cpu")
    if args.bench == "crossover" and args.computation == "attention":
        if {"tiled-bf16", "triton"} & set(args.forms):
            parser.error("argument --forms: the attention has the forms dense and tiled")
    with cmdline.user_errors(parser.prog):
        import torch

        torch.set_grad_enabled(True)
        if args.bench == "infonce":
            rows = run_infonce(args.sizes, args.repeats, args.budget_gb)
            output(args, rows, infonce_table(rows), "Speed", TITLES["infonce"])
            return
        cmdline.check_device(args.device)  # before any work
        if args.bench == "crossover":
            rows = run_crossover(
                args.sizes,
                args.dim,
                args.forms,
                args.repeats,
                args.budget_gb,
                args.device,
                args.computation,
            )
            table = crossover_table(rows, args.forms, args.dim, args.device, args.computation)
            title = TITLES["crossover"].format(computation=args.computation)
            output(args, rows, table, "Speed", title, args.device)
            return
        rows = run_scale(args.sizes, args.dim, args.dtype, args.impls, args.tile, args.device)
        columns = ["implementation", "N", "dtype", "s (forward + backward)", "peak MB"]
        columns += ["T multiply-adds/s", "of the GEMM roofline", "auto"]
        table = columns, [scale_cells(r) for r in rows]
        output(args, rows, table, "Speed", TITLES["scale"], args.device)


if __name__ == "__main__":
    main()
