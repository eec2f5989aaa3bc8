"""Speed and memory of the exact uniformity/InfoNCE implementations and of kNN graph builds.

    python benchmarks/operators.py infonce --sizes 2048 4096 8192 16384 32768 65536
    python benchmarks/operators.py knn --sizes 10000 50000 --dim 64 --k 10
    python benchmarks/operators.py knn --sizes 100000 1000000 --dim 128 --device cuda
    python benchmarks/operators.py fullgraph --nodes 65536 --dim 128
    python benchmarks/operators.py fullgraph --nodes 169343 --device cuda
    python benchmarks/operators.py gemm --n 5416 --dim 128 --tile 1024
    python benchmarks/operators.py saved --n 5416 --dim 128 --tau 0.4
    python benchmarks/operators.py keys --n 5416 --dim 128 --tau 0.4 --keys 64 256 1024
    python benchmarks/operators.py spectral --n 5416 --dim 128
    python benchmarks/operators.py scale --sizes 65536 262144 1048576 --dtype bfloat16

``infonce``: InfoNCE (two views of ``N/2`` samples, ``d = 128``) forward + backward for the
dense form, a GRACE-style chunked form (chunked forward, but autograd keeps every chunk's
``N × chunk`` temporaries) and cl2gnn's tiled form. Every (implementation, N) runs in a
fresh process, so that its peak RSS is its own; the dense/chunked runs are skipped where
their ``O(N²)`` temporaries would not fit. ``knn``: build time of ``knn_graph``'s torch
backend on ``--device`` (L2, clustered points) and, up to ``--peers-max`` nodes, of its CPU
and faiss builds against scikit-learn's brute-force ``NearestNeighbors`` (and PyG's
``knn_graph`` when torch-cluster is installed); each cl2gnn graph checked on ``--queries``
rows against float64 brute force (rows with the exact neighbour set; how far the worst
found neighbour lies beyond the exact k-th distance). ``fullgraph``: one
full-graph GRACE step (GCN encoder on a random graph, all-pairs InfoNCE over both views) on
``--device``; on CUDA after one untimed step, with the peak GPU memory.
``saved``: the tiled log-partition's forward + backward with its ``exp`` blocks kept for the
backward against recomputed, alternating in rounds (best and median of ``--repeats``).
``keys``: InfoNCE forward + backward over ``n`` views with ``num_keys`` sampled uniformity
keys against the exact loss, alternating in rounds (best and median).
``spectral``: the spectral contrastive loss's forward + backward (best and median per round).
``scale`` (for a GPU): the log-partition's forward + backward at large N for the torch tiled
and the Triton implementations, peak device memory, and the multiply-add rate against the
same device's square-GEMM rate in the same dtype (the roofline).
Each prints a Markdown table; results also go to ``--json``. torch loads once the options
have passed their checks, in the functions that use it, so that ``--help`` and an argument
error answer at once.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from _results import rss_mb  # benchmarks/ is the script's folder

from cl2gnn import _files
from cl2gnn.apps import cmdline

if TYPE_CHECKING:
    import torch

Table = tuple[list[str], list[list[str]]]  # columns, rows of cells

DIM = 128
TAU = 0.5
IMPLS = ("tiled", "triton")  # the log-partition's implementations that ``scale`` compares
TITLES = {  # the results page's title of each benchmark's table (--save)
    "infonce": "Exact InfoNCE at scale: dense vs GRACE-chunked vs tiled (forward + backward)",
    "knn": "kNN graph construction",
    "gemm": "The tiled loss's inner product",
    "saved": "Tiled log-partition: exp blocks saved against recomputed",
    "keys": "InfoNCE with sampled uniformity keys against the exact loss",
    "spectral": "Spectral contrastive loss, forward + backward",
    "scale": "Exact log-partition at scale on one GPU: Triton against torch tiled",
    "fullgraph": "Full-graph GRACE step on a large graph",
}


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


def infonce_worker(impl: str, n: int, repeats: int) -> dict:
    from cl2gnn.apps.node import peak_rss_mb
    from cl2gnn.losses import info_nce

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
                __file__,
                "_infonce",
                impl,
                str(n),
                str(repeats),
            ]
            out = subprocess.run(code, capture_output=True, text=True, check=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def infonce_table(rows: list[dict]) -> Table:
    columns = ["N views", "dense s", "dense peak RSS MB", "GRACE-chunked s", "chunked peak MB"]
    columns += ["tiled s", "tiled peak MB", "tiled / dense time"]
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
        lines.append([str(n), *cells, ratio])
    return columns, lines


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def clustered_points(n: int, dim: int) -> torch.Tensor:
    """``n`` points around 100 Gaussian centres (seeded): a kNN search with real structure."""
    import torch

    gen = torch.Generator().manual_seed(0)
    centers = torch.randn(100, dim, generator=gen) * 3
    return centers[torch.randint(0, 100, (n,), generator=gen)] + torch.randn(n, dim, generator=gen)


def knn_exactness(x: torch.Tensor, edge_index: torch.Tensor, k: int, queries: int) -> dict:
    """Check a directed L2 kNN graph of ``x`` on ``queries`` rows drawn at random against
    float64 brute force on the CPU: the share of rows whose neighbour set is the exact one,
    and the largest relative excess of a found neighbour's distance over the exact k-th
    distance (0 when every found neighbour is among the exact k, ties included)."""
    import torch

    x64 = x.detach().to("cpu", torch.float64)
    n = x64.size(0)
    rows = torch.randperm(n, generator=torch.Generator().manual_seed(1))[:queries]
    found = edge_index[0].cpu().view(n, k)[rows]  # grouped by query row, k per row
    same, excess = [], []
    per_chunk = max(1, 2**26 // n)  # rows of float64 distances: a few hundred MB per chunk
    for chunk, nbrs in zip(rows.split(per_chunk), found.split(per_chunk), strict=True):
        dist = torch.cdist(x64[chunk], x64)
        dist[torch.arange(chunk.numel()), chunk] = float("inf")  # self pairs are excluded
        exact = dist.topk(k, dim=1, largest=False)
        same.append((nbrs.sort(1).values == exact.indices.sort(1).values).all(1))
        kth = exact.values[:, -1]
        excess.append(
            (dist.gather(1, nbrs).max(1).values - kth).clamp(min=0) / kth.clamp(min=1e-12)
        )
    return {
        "exact_rows": float(torch.cat(same).double().mean()),
        "max_kth_excess": float(torch.cat(excess).max()),
    }


def timed_on(device: torch.device, fn, *args, **kwargs):
    """``fn``'s result and its wall time, with the device's queue drained on both ends."""
    _sync(device)
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    _sync(device)
    return out, time.perf_counter() - start


def run_knn(sizes, dim: int, k: int, device: str, queries: int, peers_max: int) -> list[dict]:
    import torch
    from sklearn.neighbors import NearestNeighbors

    from cl2gnn.graphs import faiss_available, knn_graph

    device = torch.device(device)
    rows = []
    for n in sizes:
        x = clustered_points(n, dim)
        if device.type != "cpu":  # the first call on a device pays for its kernels' set-up
            knn_graph(x[: 4 * k].to(device), k, "l2", backend="torch")
        on_device = x.to(device)
        graph, t = timed_on(device, knn_graph, on_device, k, "l2", backend="torch")
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        check = knn_exactness(x, graph, k, min(queries, n))
        rows.append({"n": n, "method": f"cl2gnn torch ({name})", "seconds": t, **check})
        del on_device, graph
        if n > peers_max:
            rows.append({"n": n, "method": "CPU peers", "skipped": f"N > --peers-max {peers_max}"})
            continue
        if device.type != "cpu":
            graph, t = timed(knn_graph, x, k, "l2", backend="torch")
            check = knn_exactness(x, graph, k, min(queries, n))
            rows.append({"n": n, "method": "cl2gnn torch (cpu)", "seconds": t, **check})
        if faiss_available():
            graph, t = timed(knn_graph, x, k, "l2", backend="faiss")
            check = knn_exactness(x, graph, k, min(queries, n))
            rows.append({"n": n, "method": "cl2gnn faiss flat", "seconds": t, **check})
            graph, t = timed(knn_graph, x, k, "l2", backend="faiss", index="ivf")
            # a starved IVF search drops rows (and warns): then its recall is not checked
            check = knn_exactness(x, graph, k, min(queries, n)) if graph.size(1) == n * k else {}
            rows.append({"n": n, "method": "cl2gnn faiss IVF (nprobe 16)", "seconds": t, **check})
        points = x.numpy()
        nn = NearestNeighbors(n_neighbors=k + 1, algorithm="brute").fit(points)
        _, t = timed(nn.kneighbors, points)
        rows.append({"n": n, "method": "scikit-learn NearestNeighbors (brute)", "seconds": t})
        try:
            from torch_geometric.nn import knn_graph as pyg_knn

            _, t = timed(pyg_knn, x, k)
            rows.append({"n": n, "method": "PyG knn_graph (torch-cluster)", "seconds": t})
        except ImportError:
            rows.append(
                {"n": n, "method": "PyG knn_graph", "skipped": "torch-cluster not installed"}
            )
    for r in rows:
        print(r, file=sys.stderr, flush=True)
    return rows


def knn_table(rows: list[dict]) -> Table:
    columns = ["N", "method", "seconds", "rows with the exact neighbours"]
    columns.append("largest k-th distance excess")
    lines = []
    for r in rows:
        if "skipped" in r:
            lines.append([str(r["n"]), r["method"], f"— ({r['skipped']})", "", ""])
        elif "exact_rows" in r:
            check = [f"{r['exact_rows']:.4f}", f"{r['max_kth_excess']:.1e}"]
            lines.append([str(r["n"]), r["method"], f"{r['seconds']:.2f}", *check])
        else:  # a peer's graph is not checked (or a starved IVF search)
            lines.append([str(r["n"]), r["method"], f"{r['seconds']:.2f}", "", ""])
    return columns, lines


def run_fullgraph(nodes: int, dim: int, device: str) -> dict:
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    from cl2gnn.apps.node import peak_rss_mb
    from cl2gnn.losses import info_nce
    from cl2gnn.node.models import GraphEncoder, ProjectionHead
    from cl2gnn.node.views import config_views

    device = torch.device(device)
    torch.manual_seed(0)
    x = torch.randn(nodes, dim, device=device)
    edges = torch.randint(0, nodes, (2, 5 * nodes), device=device)
    edge_index = to_undirected(edges, num_nodes=nodes)
    encoder, head = GraphEncoder(dim, dim).to(device), ProjectionHead(dim, dim).to(device)
    # GRACE's views (edges dropped, feature columns masked) as PyG transforms
    views = config_views(drop_edge=(0.2, 0.4), drop_feature=(0.3, 0.4))

    def step() -> torch.Tensor:
        v1, v2 = (view(Data(x=x, edge_index=edge_index, num_nodes=nodes)) for view in views)
        z1 = head(encoder(v1.x, v1.edge_index))  # the encoder builds each view's graph
        z2 = head(encoder(v2.x, v2.edge_index))
        loss = info_nce(z1, z2, temperature=TAU)  # all 2N views: inter- and intra-view negatives
        loss.backward()
        return loss.detach()

    if device.type == "cuda":  # the first step pays for cuBLAS's and the allocator's set-up
        step()
        torch.cuda.reset_peak_memory_stats(device)
    base = rss_mb()
    loss, seconds = timed_on(device, step)
    row = {
        "nodes": nodes,
        "views": 2 * nodes,
        "dim": dim,
        "edges": int(edge_index.size(1)),
        "step_seconds": seconds,
        "peak_rss_mb": peak_rss_mb(),
        "rss_before_step_mb": base,
        "loss": float(loss),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
    }
    if device.type == "cuda":
        row["peak_gpu_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    return row


def run_gemm(n: int, d: int, tile: int, repeats: int = 20) -> list[dict]:
    """The tiled loss's inner product ``tile × d @ d × n`` in fp32 and bf16."""
    import torch

    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        a, b = torch.randn(tile, d, dtype=dtype), torch.randn(d, n, dtype=dtype)
        out = torch.empty(tile, n, dtype=dtype)
        torch.mm(a, b, out=out)
        start = time.perf_counter()
        for _ in range(repeats):
            torch.mm(a, b, out=out)
        seconds = (time.perf_counter() - start) / repeats
        rows.append(
            {"dtype": str(dtype), "ms": 1000 * seconds, "gmacs_per_s": tile * d * n / seconds / 1e9}
        )
    return rows


def best_median_ms(step, repeats: int) -> dict:
    """Best and median wall time of ``step()`` over ``repeats`` calls after a warm-up."""
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        step()
        times.append(1000 * (time.perf_counter() - start))
    times = sorted(times[1:])
    return {"best_ms": times[0], "median_ms": times[len(times) // 2]}


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


def two_views(n: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(n // 2, d, generator=generator).requires_grad_(True) for _ in "ab")


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


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


def gemm_rate(device: torch.device, dtype: torch.dtype, size: int = 8192) -> float:
    """Multiply-adds per second of a square ``size³`` GEMM: the roofline of the loss."""
    import torch

    a = torch.randn(size, size, device=device, dtype=dtype)
    torch.mm(a, a)
    _sync(device)
    start = time.perf_counter()
    for _ in range(5):
        torch.mm(a, a)
    _sync(device)
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
            _sync(device)
            start = time.perf_counter()
            fn(x, TAU).float().sum().backward()
            _sync(device)
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
                }
            )
            print(rows[-1], file=sys.stderr, flush=True)
            x.grad = None
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_infonce":
        impl, n, repeats = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(infonce_worker(impl, n, repeats)))
        return
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    views = cmdline.int_range(2)  # two views of N / 2 samples
    p = sub.add_parser("infonce")
    p.add_argument(
        "--sizes",
        type=views,
        nargs="+",
        default=[2048, 4096, 8192, 16384, 32768, 65536],
    )
    p.add_argument("--repeats", type=cmdline.non_negative_int, default=2, help="after a warm-up")
    p.add_argument("--budget-gb", type=cmdline.positive_float, default=16.0)
    p = sub.add_parser("knn")
    p.add_argument("--sizes", type=cmdline.positive_int, nargs="+", default=[10000, 50000])
    p.add_argument("--dim", type=cmdline.positive_int, default=64)
    p.add_argument("--k", type=cmdline.positive_int, default=10)
    p.add_argument("--device", type=cmdline.device, default="cpu")
    p.add_argument(
        "--queries",
        type=cmdline.positive_int,
        default=2000,
        help="rows checked against float64 brute force",
    )
    p.add_argument(
        "--peers-max",
        type=cmdline.positive_int,
        default=200_000,
        help="the CPU builds (torch, faiss, scikit-learn, PyG) only up to this N",
    )
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
    p = sub.add_parser("spectral")
    p.add_argument("--n", type=views, default=5416)
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--rounds", type=cmdline.positive_int, default=3)
    p = sub.add_parser("scale")
    p.add_argument(
        "--sizes", type=cmdline.positive_int, nargs="+", default=[65536, 262144, 1048576]
    )
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS))
    p.add_argument("--tile", type=cmdline.positive_int, default=8192)
    p.add_argument("--device", type=cmdline.device, default="cuda")
    p = sub.add_parser("fullgraph")
    p.add_argument("--nodes", type=cmdline.positive_int, default=65536)
    p.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    p.add_argument("--device", type=cmdline.device, default="cpu")
    for p in sub.choices.values():
        p.add_argument("--json", type=cmdline.output_file)
        p.add_argument(
            "--save",
            metavar="NAME",
            type=cmdline.file_stem,
            help="also write the table to benchmarks/results/NAME.json (the results page)",
        )
    args = parser.parse_args()
    check(sub.choices[args.bench], args)
    with cmdline.user_errors(sub.choices[args.bench].prog):
        run(args)


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before torch loads, what the options' types cannot see alone."""
    if args.bench == "knn" and args.k >= min(args.sizes):
        parser.error(
            f"argument --k: must be below the smallest of --sizes ({min(args.sizes)}), got {args.k}"
        )
    rows = 2 * (getattr(args, "n", 0) // 2)  # the two views' rows: --n rounded down to even
    if args.bench == "keys" and max(args.keys) >= rows:
        parser.error(
            f"argument --keys: each must be below the {rows} rows of --n {args.n} (all of "
            f"them is the exact loss, timed anyway), got {max(args.keys)}"
        )
    if args.bench == "scale" and "triton" in args.impls:
        if importlib.util.find_spec("triton") is None:
            parser.error("argument --impls: triton is not installed; use --impls tiled")
        if not args.device.startswith("cuda") and os.environ.get("TRITON_INTERPRET") != "1":
            parser.error("argument --impls: triton needs --device cuda (or TRITON_INTERPRET=1)")


def run(args: argparse.Namespace) -> None:
    import torch

    if args.bench in ("scale", "knn", "fullgraph"):  # before any work
        cmdline.check_device(args.device)
    torch.set_grad_enabled(True)
    if args.bench == "infonce":
        rows = run_infonce(args.sizes, args.repeats, args.budget_gb)
        columns, cells = infonce_table(rows)
    elif args.bench == "knn":
        rows = run_knn(args.sizes, args.dim, args.k, args.device, args.queries, args.peers_max)
        columns, cells = knn_table(rows)
    elif args.bench == "gemm":
        rows = run_gemm(args.n, args.dim, args.tile)
        columns = ["dtype", "ms per GEMM", "G multiply-adds/s"]
        cells = [[r["dtype"], f"{r['ms']:.2f}", f"{r['gmacs_per_s']:.0f}"] for r in rows]
    elif args.bench == "scale":
        rows = run_scale(args.sizes, args.dim, args.dtype, args.impls, args.tile, args.device)
        columns = ["implementation", "N", "dtype", "s (forward + backward)", "peak MB"]
        columns += ["T multiply-adds/s", "of the GEMM roofline"]
        cells = [scale_cells(r) for r in rows]
    elif args.bench == "saved":
        rows = run_saved(args.n, args.dim, args.tau, args.rounds)
        columns = ["round", "exp blocks", "best ms", "median ms"]
        cells = [
            [str(r["round"]), "saved" if r["saved"] else "recomputed", *best_median(r)]
            for r in rows
        ]
    elif args.bench == "keys":
        rows = run_keys(args.n, args.dim, args.tau, args.keys, args.rounds)
        columns = ["round", "uniformity keys", "best ms", "median ms"]
        cells = [
            [str(r["round"]), str(r["num_keys"] or f"all {args.n} (exact)"), *best_median(r)]
            for r in rows
        ]
    elif args.bench == "spectral":
        rows = run_spectral(args.n, args.dim, args.rounds)
        columns = ["round", "best ms", "median ms"]
        cells = [[str(r["round"]), *best_median(r)] for r in rows]
    else:
        rows = run_fullgraph(args.nodes, args.dim, args.device)
        columns, cells = list(rows), [[str(v) for v in rows.values()]]
    print(markdown_table(columns, cells))
    if args.json:
        _files.write_text_atomic(args.json, json.dumps(rows, indent=1))
    if args.save:
        from _results import save_table  # benchmarks/ is the script's folder, on sys.path

        topic = "Scale" if args.bench in ("scale", "fullgraph") else "Operators"
        device = getattr(args, "device", "cpu")
        print(save_table(args.save, topic, TITLES[args.bench], columns, cells, device=device))


def best_median(row: dict) -> list[str]:
    return [f"{row['best_ms']:.1f}", f"{row['median_ms']:.1f}"]


def scale_cells(row: dict) -> list[str]:
    rate = [f"{row['tmacs_per_s']:.1f}", f"{row['roofline_fraction']:.0%}"]
    timing = [f"{row['seconds']:.2f}", f"{row['peak_mb']:.0f}"]
    return [row["impl"], str(row["n"]), row["dtype"], *timing, *rate]


def markdown_table(columns: list[str], cells: list[list[str]]) -> str:
    lines = [columns, ["---"] * len(columns), *cells]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


if __name__ == "__main__":
    main()
