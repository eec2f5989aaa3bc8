"""Node contrastive learning on generated graphs of OGB size: full-batch against mini-batch
at ogbn-arxiv's size, mini-batch at ogbn-products' size in one and two processes, and a
contrastive step against a supervised GraphSAGE step on the same sampled batches.

The graphs come from :func:`cl2gnn.datasets.contextual_sbm` (presets ``arxiv``: 169,343
nodes, 1,166,243 undirected edges, 128-d, 40 classes; ``products``: 2,449,029 nodes,
61,859,140 edges, 100-d, 47 classes), generated in each measuring process (so that its
peak memory is its own; about the graph's own size). Each measurement runs in a fresh
process and appends one JSON line to ``--out``; ``table`` turns them into
``results/node_large*.json``::

    python benchmarks/node_large.py run --preset products --mode minibatch --max-steps 100 \\
        --hidden 64 --encoder sage --num-neighbors 10 5
    torchrun --nproc_per_node=2 benchmarks/node_large.py run --preset products \\
        --mode minibatch --max-steps 100 --hidden 64 --encoder sage --num-neighbors 10 5 --no-embed
    python benchmarks/node_large.py run --preset arxiv --mode minibatch --epochs 5 --encoder sage
    python benchmarks/node_large.py run --preset arxiv --mode full --num-keys 256 --epochs 20 \\
        --encoder sage
    python benchmarks/node_large.py steps --preset products|arxiv --steps 20 --hidden 64 \\
        --encoder sage --num-neighbors 10 5 [--untrimmed]   # four runs
    python benchmarks/node_large.py inference --preset products --nodes 500000 --encoder gcn
    python benchmarks/node_large.py end-to-end --preset products --hidden 64 --encoder sage \\
        --num-neighbors 10 5
    torchrun --nproc_per_node=2 benchmarks/node_large.py end-to-end --preset products \\
        --hidden 64 --encoder sage --num-neighbors 10 5
    python benchmarks/node_large.py table
    python benchmarks/node_large.py cora --seeds 10 --batch-size 512   # -> results/

``run`` reports seconds per epoch (or per step), seed nodes per second, the peak RSS of
training and embedding (sampled every 10 ms) above the bare import (the RSS after importing
torch and cl2gnn) beside the graph's own tensors (features + undirected edge index), and,
for full epochs, the probe's test accuracy on the generator's labels (logistic regression on
the embeddings of the generator's train nodes, ``C`` on its validation nodes; capped at
``--probe-nodes`` nodes per set to bound the probe's time). ``steps`` alternates, on the
same pre-sampled batches, one contrastive step (two augmented views, encoder and head,
InfoNCE over the seeds) and one supervised GraphSAGE step (encoder, linear classifier,
cross-entropy on the seeds), both with their layers trimmed to the rows that reach the seeds
(``--untrimmed``: every layer on every sampled node). ``inference`` times layer-wise
embeddings against a full-graph forward of the same encoder on the same graph (``--nodes``:
a graph of that many nodes at the preset's mean degree). ``end-to-end`` runs one whole
epoch, the layer-wise embedding of every node and the probe, with each phase's wall time and
peak RSS, on every rank.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from _results import rss_mb  # benchmarks/ is the script's folder

from cl2gnn.apps import cmdline

PRESETS = ("arxiv", "products")


class PhaseMeter:
    """Each phase's wall time and peak RSS above ``base``: RSS is sampled every 10 ms by a
    thread, because ``ru_maxrss`` keeps the process's peak so far, not a phase's own (a
    spike shorter than the interval can be missed)."""

    def __init__(self, base_mb: float) -> None:
        self.base, self.phases, self._peak = base_mb, {}, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self._peak = max(self._peak, rss_mb())

    @contextmanager
    def phase(self, name: str):
        self._peak = rss_mb()
        start = time.perf_counter()
        yield
        seconds = time.perf_counter() - start
        peak = max(self._peak, rss_mb())
        self.phases[name] = {"s": seconds, "peak_rss_above_import_mb": peak - self.base}

    def close(self) -> dict:
        self._stop.set()
        self._thread.join()
        return self.phases


def generate(preset: str, nodes: int | None = None):
    """The preset's graph, its edges sorted by target (the neighbour sampler then reads them
    in place: no CSC copy); with ``nodes``, that many nodes at the preset's mean degree. The
    generator's freed heap goes back to the system (glibc's ``malloc_trim``), so that the
    RSS measured afterwards is the graph's and not the generator's leftovers."""
    import ctypes

    from cl2gnn.datasets import PRESETS as SIZES
    from cl2gnn.datasets import contextual_sbm

    size = dict(SIZES[preset])
    if nodes is not None:
        size["num_edges"] = round(size["num_edges"] * nodes / size["num_nodes"])
        size["num_nodes"] = nodes
    data = contextual_sbm(**size, seed=0).sort(sort_by_row=False)
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return data


def probe_split(data, cap: int) -> list:
    """The generator's train, validation and test nodes, at most ``cap`` of each drawn at
    random (the probe's time bounded)."""
    import torch

    split = []
    for seed, mask in enumerate((data.train_mask, data.val_mask, data.test_mask)):
        nodes = mask.nonzero().view(-1)
        pick = torch.randperm(nodes.numel(), generator=torch.Generator().manual_seed(seed))
        split.append(nodes[pick[:cap]])
    return split


def config_from(args):
    from cl2gnn.node import NodeConfig

    changes = dict(
        hidden=args.hidden,
        proj_hidden=args.hidden,
        encoder=args.encoder,
        epochs=args.epochs,
        learning_rate=args.lr,
        num_keys=args.num_keys,
    )
    if args.mode == "minibatch":
        changes |= dict(batch_size=args.batch_size, num_neighbors=tuple(args.num_neighbors))
    return NodeConfig().with_overrides(**changes)


def run(args) -> dict:
    import torch

    from cl2gnn.distributed import init_from_env, rank_and_world, shutdown
    from cl2gnn.node import probe_scores, train_node_model
    from cl2gnn.node.minibatch import MinibatchTrainer

    bare = rss_mb()
    init_from_env("cpu")
    rank, world = rank_and_world()
    start = time.perf_counter()
    data = generate(args.preset, args.nodes)
    generated_s = time.perf_counter() - start
    graph_mb = (data.x.nbytes + data.edge_index.nbytes) / 2**20
    config = config_from(args)
    meter = PhaseMeter(bare)  # training's own peak: the generator's sort peaks higher
    start = time.perf_counter()
    embeddings = None
    with meter.phase("train"):
        if args.max_steps:  # the first steps of an epoch (a step's memory is the same)
            trainer = MinibatchTrainer(data, "grace", config, seed=0)
            trainer.epoch(max_steps=2)  # warm-up
            start = time.perf_counter()
            losses = [trainer.epoch(max_steps=args.max_steps)]
            epoch_ms = 1000 * (time.perf_counter() - start)
            if not args.no_embed:
                embed_start = time.perf_counter()
                embeddings = trainer.embed()
                embed_s = time.perf_counter() - embed_start
        else:
            result = train_node_model(data, "grace", config, seed=0, progress=rank == 0)
            losses, epoch_ms, embeddings = result.losses, result.epoch_ms, result.embeddings
    total_s = time.perf_counter() - start
    train_peak = meter.close()["train"]["peak_rss_above_import_mb"]
    record = {
        "preset": args.preset,
        "mode": args.mode,
        "processes": world,
        "encoder": config.encoder,
        "hidden": config.hidden,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "num_neighbors": list(config.fan_outs()) if config.batch_size else None,
        "num_keys": config.num_keys,
        "max_steps": args.max_steps,
        "embedded": embeddings is not None,
        "epoch_s": epoch_ms / 1000,
        "train_and_embed_s": total_s,
        "generate_s": generated_s,
        "graph_mb": graph_mb,
        "bare_rss_mb": bare,
        "peak_rss_above_import_mb": train_peak,
        "final_loss": losses[-1],
        "threads": torch.get_num_threads(),
    }
    if config.batch_size:  # seed nodes per second of training (every rank's)
        seeds = args.max_steps * config.batch_size if args.max_steps else data.num_nodes
        record["seeds_per_s"] = min(seeds, data.num_nodes) / (epoch_ms / 1000)
    if args.max_steps and embeddings is not None:
        record["embed_s"] = embed_s
    if rank == 0 and embeddings is not None:
        split = probe_split(data, args.probe_nodes)
        record["test_accuracy"] = probe_scores(embeddings, data.y, split, 0)["test"]
        raw = probe_scores(data.x, data.y, split, 0)["test"]
        record["raw_feature_accuracy"] = raw
    shutdown()
    return record if rank == 0 else {}


def end_to_end(args) -> dict:
    """One whole epoch, the layer-wise embedding and the probe, phase by phase; under
    torchrun every rank's phases are gathered on rank 0 (each rank generates the graph)."""
    import torch
    import torch.distributed as dist

    from cl2gnn.distributed import init_from_env, rank_and_world, shutdown
    from cl2gnn.node import probe_scores
    from cl2gnn.node.minibatch import MinibatchTrainer

    bare = rss_mb()
    init_from_env("cpu")
    rank, world = rank_and_world()
    meter = PhaseMeter(bare)
    with meter.phase("generate"):
        data = generate(args.preset, args.nodes)
    graph_mb = (data.x.nbytes + data.edge_index.nbytes) / 2**20
    config = config_from(args)
    with meter.phase("setup"):  # the sampler's CSC graph, the degrees, the model
        trainer = MinibatchTrainer(data, "grace", config, seed=0)
    with meter.phase("epoch"):
        loss = trainer.epoch()
    with meter.phase("embed"):
        embeddings = trainer.embed()
    scores = {}
    if rank == 0:
        with meter.phase("probe"):
            split = probe_split(data, args.probe_nodes)
            scores["test_accuracy"] = probe_scores(embeddings, data.y, split, 0)["test"]
        scores["raw_feature_accuracy"] = probe_scores(data.x, data.y, split, 0)["test"]
    phases = meter.close()
    ranks = [phases]
    if world > 1:
        ranks = [None] * world
        dist.all_gather_object(ranks, phases)
    shutdown()
    if rank:
        return {}
    return {
        "preset": args.preset,
        "mode": "end_to_end",
        "processes": world,
        "nodes": data.num_nodes,
        "edges": data.edge_index.size(1),
        "csc_in_place": trainer.loader.node_sampler.edge_permutation is None,
        "encoder": config.encoder,
        "hidden": config.hidden,
        "batch_size": config.batch_size,
        "num_neighbors": list(config.fan_outs()),
        "steps_per_epoch": trainer.steps_per_epoch,
        "loss": loss,
        "graph_mb": graph_mb,
        "phases": ranks,
        "threads": torch.get_num_threads(),
        **scores,
    }


def steps(args) -> dict:
    """Contrastive against supervised steps on the same pre-sampled batches."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from cl2gnn.graphs import neighbor_loader
    from cl2gnn.node.minibatch import MinibatchTrainer, trimmed
    from cl2gnn.node.models import GraphEncoder
    from cl2gnn.node.sampler import SeedBatches

    data = generate(args.preset, args.nodes)
    config = config_from(args)
    torch.manual_seed(0)
    loader = neighbor_loader(
        data,
        config.fan_outs(),
        batch_sampler=SeedBatches(data.num_nodes, config.batch_size, seed=0),
    )
    sampled, sample_s = [], []
    it = iter(loader)
    for _ in range(args.steps + 2):
        start = time.perf_counter()
        sampled.append(next(it))
        sample_s.append(time.perf_counter() - start)
    classes = int(data.y.max()) + 1
    in_dim = data.x.size(1)
    contrastive = MinibatchTrainer(data, "grace", config, seed=0)  # cl2gnn's training step
    supervised = GraphEncoder(in_dim, config.hidden, config.activation, "sage")
    classifier = torch.nn.Linear(config.hidden, classes)
    supervised_opt = torch.optim.Adam(
        [*supervised.parameters(), *classifier.parameters()], lr=config.learning_rate
    )

    contrastive.trim = contrastive.trim and not args.untrimmed

    def supervised_step(batch):
        graph = supervised.propagation_graph(batch.edge_index, batch.num_nodes)
        if contrastive.trim:  # the same trimming: the layers that reach the seeds
            graph = trimmed(graph, batch.edge_index, batch.batch_size, supervised.num_layers)
        out = supervised.encode(supervised.prepare(batch.x), graph)  # training's fast path
        logits = classifier(out[: batch.batch_size])
        loss = torch.nn.functional.cross_entropy(logits, batch.y[: batch.batch_size])
        supervised_opt.zero_grad(set_to_none=True)
        loss.backward()
        supervised_opt.step()

    times = {"contrastive": [], "supervised": []}
    for i, batch in enumerate(sampled):  # alternate; the first two batches warm up
        for name, step in (("contrastive", contrastive.step), ("supervised", supervised_step)):
            start = time.perf_counter()
            step(batch)
            if i >= 2:
                times[name].append(time.perf_counter() - start)
    median = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    sample = sorted(sample_s[2:])[len(sample_s[2:]) // 2]
    profiles = {}  # where each kind of step spends its time, on the same timed batches
    for name, step in (("contrastive", contrastive.step), ("supervised", supervised_step)):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for batch in sampled[2:]:
                step(batch)
        events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
        per_step = [(e.key, e.self_cpu_time_total / 1000 / args.steps) for e in events]
        profiles[name] = per_step[: args.top]
    return {
        "profile_ms_per_step": profiles,
        "preset": args.preset,
        "mode": "steps",
        "encoder": config.encoder,
        "hidden": config.hidden,
        "batch_size": config.batch_size,
        "num_neighbors": list(config.fan_outs()),
        "steps": args.steps,
        "nodes": data.num_nodes,
        "trimmed": contrastive.trim,
        "sampled_nodes_median": sorted(b.num_nodes for b in sampled)[len(sampled) // 2],
        "sample_ms": 1000 * sample,
        "contrastive_ms": 1000 * median["contrastive"],
        "supervised_ms": 1000 * median["supervised"],
        "ratio": median["contrastive"] / median["supervised"],
        "ratio_with_sampling": (median["contrastive"] + sample) / (median["supervised"] + sample),
        "threads": torch.get_num_threads(),
    }


def inference(args) -> dict:
    """Layer-wise embeddings against a full-graph forward of the same encoder on the same
    graph, alternating, in this process; the peak RSS of the sampler's set-up and of the
    first layer-wise round (before any full-graph forward) beside the graph's tensors."""
    import torch

    from cl2gnn.graphs import TorchNeighborSampler
    from cl2gnn.node.inference import full_neighbourhood, layerwise_embeddings
    from cl2gnn.node.models import GraphEncoder

    bare = rss_mb()
    data = generate(args.preset, args.nodes)
    graph_mb = (data.x.nbytes + data.edge_index.nbytes) / 2**20
    torch.manual_seed(0)
    encoder = GraphEncoder(data.x.size(1), args.hidden, "prelu", args.encoder).eval()
    n = data.num_nodes
    meter = PhaseMeter(bare)  # each phase's own peak: the generator's sort peaks higher
    with meter.phase("setup"):
        sampler = full_neighbourhood(TorchNeighborSampler(data, [-1]))  # the trainer's graph
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


def cora(args) -> None:
    """GRACE on Cora, full-batch against mini-batch, same configuration otherwise."""
    from _results import save_table  # benchmarks/_results.py

    from cl2gnn.apps.node import run_node

    fan_out = tuple(args.num_neighbors)
    runs = {
        "full batch": {},
        f"mini-batch {args.batch_size}, fan-out {list(fan_out)}": dict(
            batch_size=args.batch_size, num_neighbors=fan_out
        ),
    }
    rows = []
    for label, changes in runs.items():
        (r,) = run_node("Cora", "grace", ("grace",), args.seeds, progress=False, **changes)
        rows.append(
            [
                label,
                len(r["seeds"]),
                f"{r['score_mean']:.2f} ± {r['score_std']:.2f}",
                f"{r['epoch_ms']:.0f}",
            ]
        )
        print(rows[-1], flush=True)
    save_table(
        "node_minibatch_cora",
        "Scale",
        "GRACE on Cora: full-batch against mini-batch (GRACE protocol)",
        ["training", "seeds", "accuracy (%)", "ms / epoch"],
        rows,
        notes="GRACE's Cora configuration for both (200 epochs; a mini-batch epoch is one "
        "pass over the nodes); mini-batch embeddings by layer-wise inference. Target: "
        "mini-batch within 1 point of full-batch.",
    )


def save_node_large(rows: list) -> None:
    from _results import save_table  # benchmarks/_results.py

    save_table(
        "node_large",
        "Scale",
        "Node contrastive learning on generated graphs of OGB size (contextual SBM)",
        [
            "graph",
            "training",
            "processes",
            "encoder",
            "hidden",
            "epochs",
            "s / epoch",
            "embedding pass (s)",
            "seeds / s",
            "graph tensors (MB)",
            "peak RSS above import (MB)",
            "RSS / graph",
            "probe test acc. (%)",
            "raw-feature probe (%)",
        ],
        rows,
        notes="Each row one process (or one torchrun group; rank 0's memory) that generated "
        "the graph itself, sorted by target. Peak RSS: training's and the embedding's own, "
        "sampled every 10 ms, above the bare import. Throughput rows (first N steps) report "
        "the global batch's seeds per second over those steps (all ranks together). Probe: "
        "logistic regression, C on validation nodes, at most --probe-nodes nodes per set.",
        command="python benchmarks/node_large.py run ... (one line per row; see the module "
        "docstring), then python benchmarks/node_large.py table",
    )


def csc_copy_note(records: list) -> str:
    """The sentence naming the runs whose graph was not sorted by target (empty if none):
    their sampler held a CSC copy, which their peak RSS includes."""
    copied = [r for r in records if not r.get("csc_in_place")]
    if not copied:
        return ""
    return (
        f" {len(copied)} of the {len(records)} runs sampled a graph not sorted by target; "
        "their sampler held a CSC copy (its edges and their permutation, 16 bytes per edge)."
    )


def save_step_profile(records: list) -> None:
    """One table of the profiled steps records: an operator per row, a column per record and
    kind of step."""
    from _results import save_table  # benchmarks/_results.py

    def label(r: dict) -> str:
        return f"{r['preset']}, {'trimmed' if r['trimmed'] else 'untrimmed'}"

    ms = [{kind: dict(ops) for kind, ops in r["profile_ms_per_step"].items()} for r in records]
    kinds = ("contrastive", "supervised")
    names = list(dict.fromkeys(name for m in ms for kind in kinds for name in m[kind]))
    save_table(
        "node_large_step_profile",
        "Scale",
        "Where a contrastive and a supervised step spend their time: torch.profiler's self "
        "CPU time, ms per step",
        ["operator"] + [f"{label(r)}: {kind}" for r in records for kind in kinds],
        [
            [name]
            + [f"{m[kind][name]:.2f}" if name in m[kind] else None for m in ms for kind in kinds]
            for name in names
        ],
        notes="The top operators of each kind of step by self CPU time over the same batches "
        "the steps table times (a dash: not in that step's top). Medians there, contrastive / "
        "supervised ms per step: "
        + "; ".join(
            f"{label(r)} {r['contrastive_ms']:.1f} / {r['supervised_ms']:.1f}" for r in records
        )
        + " (the profiler's own overhead is in these totals, not in those).",
        command="python benchmarks/node_large.py steps --preset products|arxiv --steps 20 "
        "--hidden 64 --encoder sage --num-neighbors 10 5 [--untrimmed]",
    )


def save_end_to_end(records: list) -> None:
    from _results import save_table  # benchmarks/_results.py

    rows = []
    for r in records:
        graph = f"{r['preset']}, {r['nodes']:,} nodes, {r['edges']:,} edges"
        training = (
            f"{r['encoder']} {r['hidden']}, batch {r['batch_size']}, fan-out {r['num_neighbors']}"
        )
        for rank, phases in enumerate(r["phases"]):
            for name, phase in phases.items():
                probe = name == "probe"
                rows.append(
                    [
                        graph,
                        training,
                        r["processes"],
                        rank,
                        name,
                        f"{phase['s']:.1f}",
                        f"{phase['peak_rss_above_import_mb']:.0f}",
                        f"{phase['peak_rss_above_import_mb'] / r['graph_mb']:.2f}",
                        f"{r['test_accuracy']:.2f}" if probe else None,
                        f"{r['raw_feature_accuracy']:.2f}" if probe else None,
                    ]
                )
    save_table(
        "node_large_end_to_end",
        "Scale",
        "One whole epoch, the layer-wise embedding and the probe at ogbn-products' size",
        [
            "graph",
            "training",
            "processes",
            "rank",
            "phase",
            "wall (s)",
            "peak RSS above import (MB)",
            "RSS / graph",
            "probe test acc. (%)",
            "raw-feature probe (%)",
        ],
        rows,
        notes="Each process generated the graph itself. epoch: every seed once (under "
        "torchrun each rank trains on its share of every global batch); embed: layer-wise "
        "inference of every node; probe: logistic regression on rank 0, C on validation "
        "nodes, at most --probe-nodes nodes per set. Peak RSS sampled every 10 ms per "
        "phase; graph tensors: features and undirected edge index." + csc_copy_note(records),
        command="python benchmarks/node_large.py end-to-end --preset products --hidden 64 "
        "--encoder sage --num-neighbors 10 5 (and the same under torchrun "
        "--nproc_per_node=2), then python benchmarks/node_large.py table",
    )


def table(out: Path) -> None:
    from _results import save_table  # benchmarks/_results.py

    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    runs = [r for r in records if r["mode"] in ("full", "minibatch")]
    ends = [r for r in records if r["mode"] == "end_to_end"]
    if ends:
        save_end_to_end(ends)
    rows = []
    for r in runs:
        keys = "exact tiled InfoNCE" if r["num_keys"] is None else f"{r['num_keys']} sampled keys"
        what = f"full batch, {keys}"
        if r["mode"] == "minibatch":
            what = f"mini-batch {r['batch_size']}, fan-out {r['num_neighbors']}"
            if r["max_steps"]:
                what += f", first {r['max_steps']} steps"
        rows.append(
            [
                r["preset"],
                what,
                r["processes"],
                r["encoder"],
                r["hidden"],
                r["epochs"],
                f"{r['epoch_s']:.1f}" + (f" ({r['max_steps']} steps)" if r["max_steps"] else ""),
                f"{r['embed_s']:.0f}" if "embed_s" in r else None,
                f"{r['seeds_per_s']:.0f}" if "seeds_per_s" in r else None,
                f"{r['graph_mb']:.0f}",
                f"{r['peak_rss_above_import_mb']:.0f}",
                f"{r['peak_rss_above_import_mb'] / r['graph_mb']:.2f}",
                f"{r['test_accuracy']:.2f}" if "test_accuracy" in r else None,
                f"{r['raw_feature_accuracy']:.2f}" if "raw_feature_accuracy" in r else None,
            ]
        )
    if rows:
        save_node_large(rows)
    step_rows = [
        [
            r["preset"],
            "yes" if r.get("trimmed") else "no",
            r["encoder"],
            r["hidden"],
            r["batch_size"],
            str(r["num_neighbors"]),
            r["sampled_nodes_median"],
            f"{r['sample_ms']:.0f}",
            f"{r['supervised_ms']:.0f}",
            f"{r['contrastive_ms']:.0f}",
            f"{r['ratio']:.2f}",
            f"{r['ratio_with_sampling']:.2f}",
        ]
        for r in records
        if r["mode"] == "steps"
    ]
    if step_rows:
        save_table(
            "node_large_steps",
            "Scale",
            "A contrastive step against a supervised GraphSAGE step on the same sampled batches",
            [
                "graph",
                "layers trimmed to the seeds",
                "contrastive encoder",
                "hidden",
                "batch",
                "fan-out",
                "sampled nodes (median)",
                "sampling (ms)",
                "supervised step (ms)",
                "contrastive step (ms)",
                "ratio",
                "ratio with sampling",
            ],
            step_rows,
            notes="Medians over the steps, the two kinds alternating on the same batches.",
            command="python benchmarks/node_large.py steps --preset products|arxiv --steps 20 "
            "--hidden 64 --encoder sage --num-neighbors 10 5 [--untrimmed]",
        )
    profiled = [r for r in records if r["mode"] == "steps" and "profile_ms_per_step" in r]
    if profiled:
        save_step_profile(profiled)
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
            command="python benchmarks/node_large.py inference --preset products "
            "--nodes 500000 --encoder gcn",
        )


def main(argv=None) -> int:
    parser = cmdline.ArgumentParser(prog="node_large.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "steps", "end-to-end"):
        p = sub.add_parser(name)
        p.add_argument("--preset", choices=PRESETS, required=True)
        p.add_argument("--mode", choices=("full", "minibatch"), default="minibatch")
        p.add_argument("--epochs", type=cmdline.positive_int, default=1)
        p.add_argument("--batch-size", type=cmdline.positive_int, default=1024)
        p.add_argument("--num-neighbors", type=cmdline.int_range(-1), nargs=2, default=[10, 10])
        p.add_argument("--hidden", type=cmdline.positive_int, default=128)
        p.add_argument("--encoder", choices=("gcn", "sage"), default="gcn")
        p.add_argument("--lr", type=cmdline.positive_float, default=1e-3)
        p.add_argument("--num-keys", type=cmdline.positive_int)
        p.add_argument("--max-steps", type=cmdline.positive_int)
        p.add_argument("--no-embed", action="store_true", help="with --max-steps: no embeddings")
        p.add_argument("--steps", type=cmdline.positive_int, default=30)
        p.add_argument("--probe-nodes", type=cmdline.positive_int, default=20_000)
        p.add_argument("--nodes", type=cmdline.positive_int, help="at the preset's mean degree")
        p.add_argument("--untrimmed", action="store_true", help="steps: every layer on every node")
        p.add_argument("--top", type=cmdline.positive_int, default=12, help="steps: operators")
        p.add_argument("--out", type=cmdline.output_file, default="runs/node_large.jsonl")
    p = sub.add_parser("inference")
    p.add_argument("--preset", choices=PRESETS, default="products")
    p.add_argument("--nodes", type=cmdline.positive_int, help="at the preset's mean degree")
    p.add_argument("--encoder", choices=("gcn", "sage", "gat"), default="gcn")
    p.add_argument("--hidden", type=cmdline.positive_int, default=128)
    p.add_argument("--batch-size", type=cmdline.positive_int, default=1024)
    p.add_argument("--rounds", type=cmdline.positive_int, default=2)
    p.add_argument("--out", type=cmdline.output_file, default="runs/node_large.jsonl")
    p = sub.add_parser("cora")
    p.add_argument("--seeds", type=cmdline.positive_int, default=10)
    p.add_argument("--batch-size", type=cmdline.positive_int, default=512)
    p.add_argument("--num-neighbors", type=cmdline.int_range(-1), nargs=2, default=[10, 10])
    p = sub.add_parser("table")
    p.add_argument("--out", type=cmdline.existing_path, default="runs/node_large.jsonl")
    args = parser.parse_args(argv)
    with cmdline.user_errors(parser.prog):
        if args.command == "cora":
            cora(args)
            return 0
        if args.command == "table":
            table(Path(args.out))
            return 0
        if args.command == "run" and args.mode == "full" and args.max_steps:
            parser.error("--max-steps applies to --mode minibatch")
        commands = {"run": run, "steps": steps, "inference": inference, "end-to-end": end_to_end}
        record = commands[args.command](args)
        if record:
            print(json.dumps(record))
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            with open(args.out, "a") as file:
                file.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
