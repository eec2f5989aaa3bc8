"""Layer-wise inference against a full-graph forward of the same encoder on the same
generated graph (:mod:`benchmarks._shared.large`; ``--nodes``: a graph of that many nodes at
the preset's mean degree), alternating in one process, with the peak RSS of the sampler's
set-up and of the first layer-wise round (before any full-graph forward) beside the graph's
tensors::

    python -m benchmarks.speed.large_inference run --preset products --nodes 500000 --encoder gcn
    python -m benchmarks.speed.large_inference table        # -> results/node_large_inference.json
"""

from __future__ import annotations

import sys
import time

from benchmarks._shared import large
from benchmarks._shared.large import PhaseMeter, csc_copy_note, generate
from benchmarks._shared.results import rss_mb, save_table
from cl2gnn.cli import cmdline

OUT = "runs/large_inference.jsonl"
COMMAND = (
    "python -m benchmarks.speed.large_inference run --preset products --nodes 500000 "
    "--encoder gcn; python -m benchmarks.speed.large_inference table"
)


def measure(args) -> dict:
    """Layer-wise embeddings against a full-graph forward of the same encoder on the same
    graph, alternating, in this process; the peak RSS of the sampler's set-up and of the
    first layer-wise round (before any full-graph forward) beside the graph's tensors."""
    import torch

    from cl2gnn.graphs import TorchNeighborSampler
    from cl2gnn.node.encoders.graph_encoder import GraphEncoder
    from cl2gnn.node.training.inference import full_neighborhood, layerwise_embeddings

    bare = rss_mb()
    data = generate(args.preset, args.nodes)
    graph_mb = (data.x.nbytes + data.edge_index.nbytes) / 2**20
    torch.manual_seed(0)
    encoder = GraphEncoder(data.x.size(1), args.hidden, "prelu", args.encoder).eval()
    n = data.num_nodes
    meter = PhaseMeter(bare)  # each phase's own peak: the generator's sort peaks higher
    with meter.phase("setup"):
        sampler = full_neighborhood(TorchNeighborSampler(data, [-1]))  # the trainer's graph
        degree = encoder.degree(data.edge_index, n)

    def layerwise():
        return layerwise_embeddings(encoder, data.x, sampler, degree, args.batch_size)

    def full():
        with torch.no_grad():
            start = time.perf_counter()
            graph = encoder.propagation_graph(data.edge_index, n)
            build = time.perf_counter() - start
            return encoder.embed(encoder.prepare(data.x), graph), build

    times = {"layerwise": [], "full": [], "full_graph_build": []}
    with meter.phase("layerwise"):
        embeddings = layerwise()
    phases = meter.close()
    times["layerwise"].append(phases["layerwise"]["s"])
    peak = phases["layerwise"]["peak_rss_above_import_mb"]
    for _ in range(args.rounds):
        start = time.perf_counter()
        reference, build = full()
        times["full"].append(time.perf_counter() - start)
        times["full_graph_build"].append(build)
        del reference
        start = time.perf_counter()
        embeddings = layerwise()
        times["layerwise"].append(time.perf_counter() - start)
    reference, _ = full()
    best = {k: min(v) for k, v in times.items()}
    return {
        "preset": args.preset,
        "mode": "inference",
        "nodes": n,
        "edges": data.edge_index.size(1),
        "encoder": args.encoder,
        "hidden": args.hidden,
        "batch_size": args.batch_size,
        "rounds": args.rounds,
        "layerwise_s": best["layerwise"],
        "full_forward_s": best["full"],
        "full_graph_build_s": best["full_graph_build"],
        "ratio": best["layerwise"] / best["full"],
        "ratio_to_forward_without_build": best["layerwise"]
        / (best["full"] - best["full_graph_build"]),
        "csc_and_degree_s": phases["setup"]["s"],
        "csc_in_place": sampler.edge_permutation is None,
        "times_s": times,
        "max_abs_difference": float((embeddings - reference).abs().max()),
        "graph_mb": graph_mb,
        "setup_peak_rss_above_import_mb": phases["setup"]["peak_rss_above_import_mb"],
        "layerwise_peak_rss_above_import_mb": peak,
        "layerwise_rss_over_graph": peak / graph_mb,
        "threads": torch.get_num_threads(),
    }


def table(records: list[dict]) -> None:
    inference_rows = [
        [
            f"{r['preset']}-density, {r['nodes']:,} nodes, {r['edges']:,} edges",
            r["encoder"],
            r["hidden"],
            r["batch_size"],
            f"{r['full_forward_s']:.2f} ({r['full_graph_build_s']:.2f})",
            f"{r['layerwise_s']:.2f}",
            f"{r['ratio']:.2f}",
            f"{r['ratio_to_forward_without_build']:.2f}",
            f"{r['graph_mb']:.0f}",
            f"{r['layerwise_peak_rss_above_import_mb']:.0f}",
            f"{r['layerwise_rss_over_graph']:.2f}",
        ]
        for r in records
        if r["mode"] == "inference"
    ]
    if inference_rows:
        save_table(
            "node_large_inference",
            "Scale",
            "Layer-wise inference against a full-graph forward of the same encoder",
            [
                "graph",
                "encoder",
                "hidden",
                "target batch",
                "full-graph forward (s) (of it, building the graph)",
                "layer-wise (s)",
                "ratio",
                "ratio to the forward alone",
                "graph tensors (MB)",
                "layer-wise peak RSS above import (MB)",
                "RSS / graph",
            ],
            inference_rows,
            notes="One process per row, the two alternating; the best of the rounds. The "
            "layer-wise peak: RSS sampled every 10 ms during the first layer-wise round, "
            "before any full-graph forward ran, above the bare import; it holds the graph and "
            "the layers' outputs."
            + csc_copy_note([r for r in records if r["mode"] == "inference"]),
            command=COMMAND,
        )


def arguments(parser) -> None:
    parser.add_argument("--preset", choices=large.PRESETS, default="products")
    parser.add_argument("--nodes", type=cmdline.positive_int, help="at the preset's mean degree")
    parser.add_argument("--encoder", choices=("gcn", "sage", "gat"), default="gcn")
    parser.add_argument(
        "--hidden",
        type=cmdline.positive_int,
        default=128,
        help="the encoder's output width (GraphEncoder's out_channels)",
    )
    parser.add_argument("--batch-size", type=cmdline.positive_int, default=1024)
    parser.add_argument("--rounds", type=cmdline.positive_int, default=2)
    parser.add_argument("--out", type=cmdline.output_file, default=OUT)


if __name__ == "__main__":
    sys.exit(large.main(__doc__.split("\n\n")[0], measure, table, OUT, arguments))
