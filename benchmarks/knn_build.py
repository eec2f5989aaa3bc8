"""How fast cl2gnn builds a kNN graph against its peers (FAISS, scikit-learn, PyG), and how
exact each of its graphs is.

    python benchmarks/knn_build.py --sizes 10000 50000 --dim 64 --k 10
    python benchmarks/knn_build.py --sizes 100000 1000000 --dim 128 --device cuda

Build time of ``knn_graph``'s torch backend on ``--device`` (L2, clustered points) and, up to
``--peers-max`` nodes, of its CPU and faiss builds against scikit-learn's brute-force
``NearestNeighbors`` (and PyG's ``knn_graph`` when torch-cluster is installed); each cl2gnn
graph checked on ``--queries`` rows against float64 brute force (rows with the exact
neighbor set; how far the worst found neighbor lies beyond the exact k-th distance).
Prints a Markdown table (``--json``: the rows; ``--save NAME``: the results page's table).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from _operators import (
    Table,
    output,
    output_arguments,
    timed,
    timed_on,
)

from cl2gnn.apps import cmdline

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
    columns = ["N", "method", "seconds", "rows with the exact neighbors"]
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
        rows = run_knn(args.sizes, args.dim, args.k, args.device, args.queries, args.peers_max)
        output(args, rows, knn_table(rows), "Speed", "kNN graph construction", args.device)


if __name__ == "__main__":
    main()
