"""Accuracy against depth with each normalisation: a supervised GCN of 2 to 64 layers on
Cora (public split) and wisconsin (its shipped splits, one per seed), the same schedule for
every variant, each with and without a LayerNorm, and two collapse measures of the last
hidden layer.

Variants (one normalisation after every hidden convolution, then, with ``--layer-norm yes``,
a ``torch.nn.LayerNorm``, then ReLU: ContraNorm's ``DeepGCN`` with ``--use_layer_norm``, which
its ``run_baselines.sh`` gives every variant): ``none``, ``batchnorm``
(``torch.nn.BatchNorm1d``), ``pairnorm`` (PyG's ``PairNorm``), ``diffgroupnorm`` (PyG's
``DiffGroupNorm``, one group per class), ``contrastive`` (:class:`cl2gnn.nn.ContrastiveNorm`'s
step, ContraNorm's form: similarities of normalised rows, ``τ = 1``, scale ``s = --step``,
no self pairs, over ``--keys`` keys sampled afresh at every layer and training call, one
fixed sample per layer at evaluation), ``contrastive-exact`` (ContraNorm's GNN form exactly:
the complete graph minus the input graph's edges and self pairs, ``N/K`` times the cost) and
``contrastive-residual`` (the sampled form plus a residual connection around each hidden
layer). Each cell is (graph, depth, variant, LayerNorm, seed); its result is appended to
``--cells`` as soon as it is done, so an interrupted run resumes where it stopped, and
``table`` turns the cells into ``results/depth.json`` (accuracy, the variants side by side),
``results/depth_collapse.json`` and ``docs/gallery/depth.png``::

    python -m benchmarks.accuracy.depth run --graphs wisconsin --seeds 3
    python -m benchmarks.accuracy.depth run --graphs Cora --variants contrastive-exact \
        --depths 2 4 8 16
    python -m benchmarks.accuracy.depth table --command "..." --notes "..."

Collapse measures of the last hidden layer ``H`` (eval mode, the best-validation weights):
the Dirichlet energy as a Rayleigh quotient ``tr(Hᵀ L H) / ‖H‖²_F`` (``L = I - D^-½AD^-½``,
:meth:`cl2gnn.nn.AlignConv.energy`; scale-free, 0 when every row is the same multiple of
``D^½ 1``) and the effective rank ``exp(entropy(σ / Σσ))`` of ``H``'s singular values.
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch_geometric.nn import DiffGroupNorm, GCNConv, PairNorm
from torch_geometric.utils import to_torch_csr_tensor, to_undirected

from benchmarks._shared.results import RESULTS_DIR, ROOT, save_table
from cl2gnn.cli import cmdline
from cl2gnn.datasets import load_node_dataset
from cl2gnn.nn import AlignConv, ContrastiveNorm

VARIANTS = (
    "none",
    "batchnorm",
    "pairnorm",
    "diffgroupnorm",
    "contrastive",
    "contrastive-exact",
    "contrastive-residual",
)
CELLS = RESULTS_DIR / "cells" / "depth.json"  # a subfolder: the page reads results/*.json
RIVALS = ("none", "batchnorm", "pairnorm", "diffgroupnorm")
OURS = ("contrastive", "contrastive-exact")
FIGURE = ROOT / "docs" / "gallery" / "depth.png"


class Norm(torch.nn.Module):
    """One hidden layer's normalisation, then (``layer_norm``) a LayerNorm, as ContraNorm's
    ``DeepGCN`` with ``--use_layer_norm`` does for every variant.

    ``contrastive`` attends to ``keys`` sampled afresh at every training call; in eval mode
    it reads one fixed sample drawn when the layer is built (a buffer), so that evaluation is
    deterministic and validation picks the weights on the same operator as the test.
    ``contrastive-exact`` is ContraNorm's GNN form: the complete graph minus the input
    graph's edges and self pairs, every call."""

    def __init__(
        self,
        variant: str,
        channels: int,
        classes: int,
        step: float,
        keys: int,
        nodes: int,
        layer_norm: bool,
    ) -> None:
        super().__init__()
        self.variant = variant
        if variant == "batchnorm":
            self.inner = torch.nn.BatchNorm1d(channels)
        elif variant == "pairnorm":
            self.inner = PairNorm()
        elif variant == "diffgroupnorm":
            self.inner = DiffGroupNorm(channels, classes)
        elif variant.startswith("contrastive"):
            # the step alone: the LayerNorm is the option every variant shares
            self.inner = ContrastiveNorm(
                channels, step=step, temperature=1.0, self_loops=False, norm=None
            )
        else:
            self.inner = torch.nn.Identity()
        self.sampled = variant in ("contrastive", "contrastive-residual")
        self.keys = min(keys, nodes)
        if self.sampled:
            self.register_buffer("eval_keys", torch.randperm(nodes)[: self.keys])
        # torch's default eps, as ContraNorm's nn.LayerNorm(args.hid)
        self.layer_norm = torch.nn.LayerNorm(channels) if layer_norm else None

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        if self.sampled:
            keys = (
                torch.randperm(x.size(0), device=x.device)[: self.keys]
                if self.training
                else self.eval_keys
            )
            x = self.inner(x, keys=keys)
        elif self.variant == "contrastive-exact":
            x = self.inner(x, exclude_index=edge_index)
        else:
            x = self.inner(x)
        return x if self.layer_norm is None else self.layer_norm(x)


class DeepGCN(torch.nn.Module):
    def __init__(
        self, variant, depth, features, hidden, classes, dropout, step, keys, nodes, layer_norm
    ) -> None:
        super().__init__()
        widths = [features] + [hidden] * (depth - 1) + [classes]
        self.convs = torch.nn.ModuleList(
            GCNConv(a, b, cached=True) for a, b in itertools.pairwise(widths)
        )
        self.norms = torch.nn.ModuleList(
            Norm(variant, hidden, classes, step, keys, nodes, layer_norm) for _ in range(depth - 1)
        )
        self.residual = variant.endswith("residual")
        self.dropout = dropout

    def forward(self, x, adj_t, edge_index):
        """``(logits, last hidden layer)``; the convolutions read the transposed sparse
        adjacency ``adj_t`` (the same operator as ``edge_index``, a sparse product instead
        of a scatter: 2-3 times faster on CPU), the contrastive normalisation ``edge_index``."""
        for i, (conv, norm) in enumerate(zip(self.convs[:-1], self.norms, strict=True)):
            h = conv(F.dropout(x, self.dropout, self.training), adj_t)
            h = F.relu(norm(h, edge_index))
            x = x + h if self.residual and i > 0 else h
        return self.convs[-1](F.dropout(x, self.dropout, self.training), adj_t), x


def effective_rank(h: torch.Tensor) -> float:
    s = torch.linalg.svdvals(h.double())
    p = s / s.sum().clamp_min(1e-300)
    return float(torch.exp(-(p * torch.log(p.clamp_min(1e-300))).sum()))


def dirichlet_ratio(h: torch.Tensor, edge_index: torch.Tensor) -> float:
    h = h.double()
    return float(AlignConv().energy(h, edge_index) / (h * h).sum().clamp_min(1e-300))


def split_of(data, seed: int):
    masks = (data.train_mask, data.val_mask, data.test_mask)
    return [m if m.dim() == 1 else m[:, seed % m.size(1)] for m in masks]


def run_cell(data, variant, depth, seed, layer_norm, args) -> dict:
    torch.manual_seed(seed)
    train, val, test = split_of(data, seed)
    classes = int(data.y.max()) + 1
    n = data.num_nodes
    model = DeepGCN(
        variant,
        depth,
        data.num_features,
        args.hidden,
        classes,
        args.dropout,
        args.step,
        args.keys,
        n,
        layer_norm,
    )
    adj_t = to_torch_csr_tensor(data.edge_index.flip(0), size=(n, n))
    # the pairs the exact form excludes: every edge both ways, as ContraNorm masks its
    # (symmetric) adjacency
    pairs = to_undirected(data.edge_index, num_nodes=n)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    best, best_state, since, epochs = -1.0, None, 0, 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        opt.zero_grad()
        logits, _ = model(data.x, adj_t, pairs)
        F.cross_entropy(logits[train], data.y[train]).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(data.x, adj_t, pairs)[0].argmax(1)
        val_acc = float((pred[val] == data.y[val]).float().mean())
        epochs = epoch + 1
        if val_acc > best:
            best, since = val_acc, 0
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            since += 1
            if since >= args.patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        logits, hidden = model(data.x, adj_t, pairs)
    pred = logits.argmax(1)
    return {
        "graph": data.name,
        "depth": depth,
        "variant": variant,
        "layer_norm": layer_norm,
        "seed": seed,
        "test": float((pred[test] == data.y[test]).float().mean()),
        "val": best,
        "dirichlet": dirichlet_ratio(hidden, data.edge_index),
        "erank": effective_rank(hidden),
        "epochs": epochs,
        "seconds": round(time.perf_counter() - start, 1),
        "settings": settings(args),
    }


def settings(args) -> dict:
    keys = ("hidden", "dropout", "lr", "weight_decay", "epochs", "patience", "step", "keys")
    return {k: getattr(args, k) for k in keys}


def load_cells(path: Path) -> list[dict]:
    return json.loads(path.read_text()) if path.exists() else []


def cell_key(c: dict) -> tuple:
    return (c["graph"], c["depth"], c["variant"], c["layer_norm"], c["seed"])


def run(args) -> None:
    torch.set_num_threads(args.threads)
    cells = load_cells(args.cells)
    done = {(*cell_key(c), json.dumps(c["settings"])) for c in cells}
    graphs = []
    for name in args.graphs:
        graphs.append(load_node_dataset(name))
        graphs[-1].name = name
    # depth by depth, every graph at each seed: a partial run covers its depths evenly
    for depth in args.depths:
        for seed in range(args.seeds):
            for data in graphs:
                for layer_norm, variant in itertools.product(args.layer_norm, args.variants):
                    key = (data.name, depth, variant, layer_norm, seed, json.dumps(settings(args)))
                    if key in done:
                        continue
                    cell = run_cell(data, variant, depth, seed, layer_norm, args)
                    cells.append(cell)
                    tmp = args.cells.with_suffix(".tmp")
                    tmp.write_text(json.dumps(cells, indent=0) + "\n")
                    tmp.replace(args.cells)
                    print(json.dumps({k: cell[k] for k in list(cell)[:-1]}), flush=True)


def mean_std(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    mean = statistics.mean(values) * scale
    std = statistics.pstdev(values) * scale if len(values) > 1 else 0.0
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def chosen_cells(cells: list[dict]) -> tuple[list[dict], str, list[str]]:
    """The cells of the schedule most cells ran; the schedule; and what the cells of other
    schedules measured."""
    counts: dict = {}
    for c in cells:
        key = json.dumps(c["settings"], sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
    chosen = max(counts, key=counts.get)
    tried = other_settings(cells, json.loads(chosen))
    return [c for c in cells if json.dumps(c["settings"], sort_keys=True) == chosen], chosen, tried


def accuracy_cell(group: list[dict] | None, seeds: int, best: bool) -> str:
    """``mean ± std`` of a variant's test accuracy (bold where the row's best), its seeds
    where fewer than the row's, ``not run`` where it has none."""
    if not group:
        return "not run"
    text = mean_std([c["test"] for c in group], 100)
    text = f"**{text}**" if best else text
    return text if len(group) == seeds else f"{text} ({len(group)} seed{'s' * (len(group) > 1)})"


def table(args) -> None:
    cells, chosen, tried = chosen_cells(load_cells(args.cells))
    groups: dict = {}
    for c in cells:
        groups.setdefault((c["graph"], c["depth"], c["layer_norm"], c["variant"]), []).append(c)
    variants = [v for v in VARIANTS if any(k[3] == v for k in groups)]
    settings_rows = sorted({k[:3] for k in groups}, key=lambda k: (k[0], k[2], k[1]))
    rows = []
    for graph, depth, layer_norm in settings_rows:
        here = [groups.get((graph, depth, layer_norm, v)) for v in variants]
        means = [statistics.mean(c["test"] for c in g) if g else None for g in here]
        best = max(m for m in means if m is not None)
        seeds = max(len(g) for g in here if g)
        rows.append(
            [graph, depth, "yes" if layer_norm else "no", seeds]
            + [
                accuracy_cell(g, seeds, m is not None and m >= best - 1e-6)
                for g, m in zip(here, means, strict=True)
            ]
        )
    collapse = [
        [
            graph,
            depth,
            "yes" if layer_norm else "no",
            variant,
            f"{statistics.median(c['dirichlet'] for c in group):.3g}",
            f"{statistics.median(c['erank'] for c in group):.1f}",
            round(statistics.mean(c["epochs"] for c in group)),
        ]
        for (graph, depth, layer_norm, variant), group in sorted(
            groups.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1], VARIANTS.index(kv[0][3]))
        )
    ]
    baselines = []
    for graph in sorted({c["graph"] for c in cells}):
        seeds = sorted({c["seed"] for c in cells if c["graph"] == graph})
        baselines.append(f"{graph} {mean_std([majority(graph, s) for s in seeds], 100)}")
    draw(groups)
    schedule = (
        f"Schedule for every variant: {chosen}; Adam, test accuracy at the best validation "
        "epoch, training stopped after `patience` epochs without a better one. "
    )
    save_table(
        "depth",
        "Node classification",
        "Accuracy against depth: a supervised GCN with each normalisation, with and without "
        "LayerNorm",
        ["graph", "depth", "LayerNorm", "seeds", *(f"{v} (%)" for v in variants)],
        rows,
        notes=(
            schedule + "Test accuracy, mean ± std over the seeds; bold: the best mean of the row. "
            "`contrastive`: ContrastiveNorm over keys sampled afresh at every training "
            "call, one fixed sample at evaluation; `contrastive-exact`: ContraNorm's GNN form, "
            "the complete graph minus the input graph's edges and self pairs. Every variant "
            "is run with and without a LayerNorm after its normalisation (ContraNorm's "
            "`--use_layer_norm`). Trivial baseline, the training split's majority class on "
            "the test nodes: "
            + "; ".join(baselines)
            + ". Where ContrastiveNorm (either form) is not the best mean: "
            + ("; ".join(not_won(groups)) or "nowhere")
            + ". "
            + (f"Other settings tried (not in the rows): {'; '.join(tried)}. " if tried else "")
            + args.notes
        ),
        command=args.command,
    )
    save_table(
        "depth_collapse",
        "Node classification",
        "Collapse against depth: the last hidden layer of each run of the depth table",
        [
            "graph",
            "depth",
            "LayerNorm",
            "normalisation",
            "Dirichlet ratio (median)",
            "effective rank (median)",
            "epochs run (mean)",
        ],
        collapse,
        notes=schedule + "The same cells as the depth table (its seeds). " + args.notes,
        command=args.command,
    )


def not_won(groups: dict) -> list[str]:
    """``graph depth (LayerNorm yes|no): <winner> <its mean> against <our best form's>`` for
    every row whose best mean is not a ContrastiveNorm form's."""
    out = []
    for graph, depth, layer_norm in sorted({k[:3] for k in groups}):
        means = {
            v: statistics.mean(c["test"] for c in cs) * 100
            for (g, d, ln, v), cs in groups.items()
            if (g, d, ln) == (graph, depth, layer_norm)
        }
        ours = max((v for v in OURS if v in means), key=means.get, default=None)
        rival = max((v for v in means if v not in OURS), key=means.get, default=None)
        if ours is None or rival is None or means[ours] >= means[rival] - 1e-4:
            continue
        out.append(
            f"{graph} {depth} (LayerNorm {'yes' if layer_norm else 'no'}): {rival} "
            f"{means[rival]:.1f} against {ours} {means[ours]:.1f}"
        )
    return out


def other_settings(cells: list[dict], chosen: dict) -> list[str]:
    """Test accuracy of the cells run with other settings than the table's, by what differs."""
    tried: dict = {}
    for c in cells:
        changed = ", ".join(f"{k} {v}" for k, v in c["settings"].items() if chosen.get(k) != v)
        if changed:
            key = (c["graph"], c["depth"], c["variant"], c["layer_norm"], changed)
            tried.setdefault(key, []).append(c["test"])
    return [
        f"{graph} {depth} {variant} (LayerNorm {'yes' if ln else 'no'}) with {changed}: "
        f"{mean_std(tests, 100)} ({len(tests)} seeds)"
        for (graph, depth, variant, ln, changed), tests in sorted(tried.items())
    ]


def majority(graph: str, seed: int) -> float:
    """Test accuracy of always predicting the training split's most frequent class."""
    data = load_node_dataset(graph)
    train, _, test = split_of(data, seed)
    guess = torch.bincount(data.y[train]).argmax()
    return float((data.y[test] == guess).float().mean())


def draw(groups: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graphs = sorted({k[0] for k in groups})
    fig, axes = plt.subplots(2, len(graphs), figsize=(5.5 * len(graphs), 8), squeeze=False)
    for row, layer_norm in enumerate((False, True)):
        for ax, graph in zip(axes[row], graphs, strict=True):
            for variant in VARIANTS:
                points = sorted(
                    (d, statistics.mean(c["test"] for c in cs) * 100)
                    for (g, d, ln, v), cs in groups.items()
                    if (g, ln, v) == (graph, layer_norm, variant)
                )
                if points:
                    ax.plot(*zip(*points, strict=True), marker="o", label=variant)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("layers")
            ax.set_ylabel("test accuracy (%)")
            ax.set_title(f"{graph}, LayerNorm {'yes' if layer_norm else 'no'}")
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    go = sub.add_parser("run")
    go.add_argument("--graphs", nargs="+", default=["Cora", "wisconsin"])
    go.add_argument("--depths", nargs="+", type=int, default=[2, 4, 8, 16, 32, 64])
    go.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS[:-1]))
    go.add_argument(
        "--layer-norm",
        nargs="+",
        choices=("no", "yes"),
        default=["no", "yes"],
        help="run every variant without and/or with a LayerNorm after its normalisation",
    )
    go.add_argument("--seeds", type=int, default=3)
    go.add_argument("--epochs", type=int, default=100)
    go.add_argument("--patience", type=int, default=20)
    go.add_argument("--hidden", type=int, default=64)
    go.add_argument("--dropout", type=float, default=0.5)
    go.add_argument("--lr", type=float, default=0.01)
    go.add_argument("--weight-decay", type=float, default=5e-4)
    go.add_argument("--threads", type=int, default=1)
    go.add_argument("--step", type=float, default=1.0, help="ContrastiveNorm's step")
    go.add_argument("--keys", type=int, default=128, help="ContrastiveNorm's sampled keys")
    show = sub.add_parser("table")
    show.add_argument("--command", default="python -m benchmarks.accuracy.depth run (see notes)")
    show.add_argument("--notes", default="")
    for p in (go, show):
        p.add_argument("--cells", type=Path, default=CELLS)
    args = parser.parse_args()
    if args.what == "run":
        if any(d < 2 for d in args.depths) or min(args.seeds, args.epochs, args.keys) < 1:
            parser.error("depths must be >= 2, seeds, epochs and keys >= 1")
        args.layer_norm = [choice == "yes" for choice in dict.fromkeys(args.layer_norm)]
        args.cells.parent.mkdir(parents=True, exist_ok=True)
        run(args)
    else:
        table(args)


if __name__ == "__main__":
    main()
