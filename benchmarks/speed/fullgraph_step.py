"""How much memory one full-graph GRACE training step takes on a large graph: two augmented
views, a GCN encoder and projection head, InfoNCE over all ``2N`` views with inter- and
intra-view negatives, backward, on a random graph; on CUDA after one untimed step, with the
peak GPU memory.

    python -m benchmarks.speed.fullgraph_step --nodes 65536 --dim 128
    python -m benchmarks.speed.fullgraph_step --nodes 169343 --device cuda

Prints a one-row Markdown table (``--json``: the row; ``--save NAME``: the results page's).
"""

from __future__ import annotations

from benchmarks._shared.operators import (
    DIM,
    TAU,
    output,
    output_arguments,
    timed_on,
)
from benchmarks._shared.results import rss_mb
from cl2gnn.cli import cmdline


def run_fullgraph(nodes: int, dim: int, device: str) -> dict:
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    from cl2gnn.losses import info_nce
    from cl2gnn.node.encoders.graph_encoder import GraphEncoder
    from cl2gnn.node.evaluation.experiment import peak_rss_mb
    from cl2gnn.node.methods.heads import ProjectionHead
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


def main() -> None:
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=cmdline.positive_int, default=65536)
    parser.add_argument("--dim", type=cmdline.positive_int, default=DIM)
    parser.add_argument("--device", type=cmdline.device, default="cpu")
    output_arguments(parser)
    args = parser.parse_args()
    with cmdline.user_errors(parser.prog):
        import torch

        cmdline.check_device(args.device)  # before any work
        torch.set_grad_enabled(True)
        row = run_fullgraph(args.nodes, args.dim, args.device)
        table = list(row), [[str(v) for v in row.values()]]
        output(args, row, table, "Scale", "Full-graph GRACE step on a large graph", args.device)


if __name__ == "__main__":
    main()
