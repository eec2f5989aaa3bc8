"""How fast cl2gnn builds a kNN graph against its peers (FAISS, scikit-learn, PyG), and how
exact each of its graphs is.

    python -m benchmarks.speed.knn_build --sizes 10000 50000 --dim 64 --k 10
    python -m benchmarks.speed.knn_build --sizes 100000 1000000 --dim 128 --device cuda

Build time on ``--device`` (L2, clustered points) of the torch tiles in each of
``--precisions`` (default: ``full`` and ``bf16``, and ``tf32`` on CUDA), with the share of
rows that the reduced precision could not certify and searched again in full, and of
``knn_graph``'s default choice (named in the row); up to ``--peers-max`` nodes, of its CPU
and faiss builds against scikit-learn's brute-force ``NearestNeighbors`` (and PyG's
``knn_graph`` when torch-cluster is installed). Each cl2gnn graph is checked on ``--queries``
rows against float64 brute force (rows with the exact neighbor set; how far the worst found
neighbor lies beyond the exact k-th distance). Prints a Markdown table (``--json``: the
rows; ``--save NAME``: the results page's table).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from benchmarks._shared.operators import (
    Table,
    output,
    output_arguments,
    timed,
    timed_on,
)
from cl2gnn.cli import cmdline
from cl2gnn.cli.catalogue import KNN_TILE_PRECISIONS as TILE_PRECISIONS

if TYPE_CHECKING:
    import torch


def clustered_points(n: int, dim: int) -> torch.Tensor:
    """``n`` points around 100 Gaussian centres (seeded): a kNN search with real structure."""
    import torch

    gen = torch.Generator().manual_seed(0)
    centers = torch.randn(100, dim, generator=gen) * 3
    return centers[torch.randint(0, 100, (n,), generator=gen)] + torch.randn(n, dim, generator=gen)


def knn_exactness(x: torch.Tensor, edge_index: torch.Tensor, k: int, queries: int) -> dict:
    """Check a directed L2 kNN graph of ``x`` on ``queries`` rows drawn at random against
    float64 brute force on the CPU: the share of rows whose neighbor set is the exact one,
    and the largest relative excess of a found neighbor's distance over the exact k-th
    distance (0 when every found neighbor is among the exact k, ties included)."""
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


def run_knn(
    sizes,
    dim: int,
    k: int,
    device: str,
    queries: int,
    peers_max: int,
    precisions: list[str],
    tile_size: int | None,
) -> list[dict]:
    import torch
    from sklearn.neighbors import NearestNeighbors

    from cl2gnn.graphs import faiss_available, knn_graph
    from cl2gnn.graphs.knn import choose_search, default_tile_size
    from cl2gnn.graphs.knn_tiles import knn_tiles

    device = torch.device(device)
    tile = tile_size or default_tile_size(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    rows = []
    for n in sizes:
        x = clustered_points(n, dim)
        on_device = x.to(device)
        for precision in precisions:
            knn_tiles(on_device[: 4 * k], k, "l2", tile, precision)  # a device's first call
            search, t = timed_on(device, knn_tiles, on_device, k, "l2", tile, precision)
            check = knn_exactness(x, _edges(search.index), k, min(queries, n))
            method = f"cl2gnn torch tiles, {precision} ({name}, tile {tile})"
            rows.append({"n": n, "method": method, "seconds": t, **check})
            if precision != "full":
                rows[-1]["rechecked_rows"] = search.rechecked / n
            del search
        backend, precision = choose_search("auto", "auto", "flat", k, device, x.dtype)
        choice = backend if backend == "faiss" else f"torch {precision}"
        graph, t = timed_on(device, knn_graph, on_device, k, "l2")
        check = knn_exactness(x, graph, k, min(queries, n))
        method = f"cl2gnn knn_graph default: {choice} ({name})"
        rows.append({"n": n, "method": method, "seconds": t, **check})
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


def _edges(index: torch.Tensor) -> torch.Tensor:
    """The directed kNN graph of a ``[N, k]`` neighbor table, in ``knn_graph``'s layout."""
    import torch

    n, k = index.shape
    query = torch.arange(n, device=index.device).repeat_interleave(k)
    return torch.stack([index.reshape(-1), query])


def knn_table(rows: list[dict]) -> Table:
    columns = ["N", "method", "seconds", "rows with the exact neighbors"]
    columns += ["largest k-th distance excess", "rows searched again in full"]
    lines = []
    for r in rows:
        if "skipped" in r:
            lines.append([str(r["n"]), r["method"], f"— ({r['skipped']})", "", "", ""])
            continue
        line = [str(r["n"]), r["method"], f"{r['seconds']:.2f}", "", "", ""]
        if "exact_rows" in r:  # a peer's graph is not checked (nor a starved IVF search)
            line[3:5] = [f"{r['exact_rows']:.4f}", f"{r['max_kth_excess']:.1e}"]
        if "rechecked_rows" in r:
            line[5] = f"{r['rechecked_rows']:.4f}"
        lines.append(line)
    return columns, lines


def main() -> None:
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=cmdline.positive_int, nargs="+", default=[10000, 50000])
    parser.add_argument("--dim", type=cmdline.positive_int, default=64)
    parser.add_argument("--k", type=cmdline.positive_int, default=10)
    parser.add_argument("--device", type=cmdline.device, default="cpu")
    parser.add_argument(
        "--queries",
        type=cmdline.positive_int,
        default=2000,
        help="rows checked against float64 brute force",
    )
    parser.add_argument(
        "--precisions",
        nargs="+",
        choices=TILE_PRECISIONS,
        help="the torch tiles' precisions to time (default: full, bf16, and tf32 on CUDA)",
    )
    parser.add_argument(
        "--tile-size",
        type=cmdline.positive_int,
        help="rows per tile of the torch search (default: knn_graph's for the device)",
    )
    parser.add_argument(
        "--peers-max",
        type=cmdline.positive_int,
        default=200_000,
        help="the CPU builds (torch, faiss, scikit-learn, PyG) only up to this N",
    )
    output_arguments(parser)
    args = parser.parse_args()
    if args.k >= min(args.sizes):
        parser.error(
            f"argument --k: must be below the smallest of --sizes ({min(args.sizes)}), got {args.k}"
        )
    with cmdline.user_errors(parser.prog):
        cmdline.check_device(args.device)  # before any work
        precisions = args.precisions or [
            p for p in TILE_PRECISIONS if p != "tf32" or args.device.startswith("cuda")
        ]
        rows = run_knn(
            args.sizes,
            args.dim,
            args.k,
            args.device,
            args.queries,
            args.peers_max,
            precisions,
            args.tile_size,
        )
        output(args, rows, knn_table(rows), "Speed", "kNN graph construction", args.device)


if __name__ == "__main__":
    main()
