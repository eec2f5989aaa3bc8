"""The node-level zoo's methods (DGI, G-BT, BGRL's Cora configuration, GCA, MVGRL) on Cora
beside their anchors: each method's ``cl2gnn node`` result (``--json``) and, where it ran
here, its authors' code's, against the published number (or, for a method without one, its
authors' code run here).

    python -m cl2gnn node --dataset Cora --method dgi --protocol public --seeds 10 \\
        --baselines --json benchmarks/results/cells/zoo/dgi.json  # or dgi_seed<k>.json
    python -m benchmarks.reproduce.node_zoo --runs benchmarks/results/cells/zoo \\
        --authors benchmarks/configs/node_zoo_authors.json \\
        --not-measured benchmarks/configs/node_zoo_not_measured.json
                                                  # -> results/node_zoo.json

A method with no files in ``--runs`` keeps the row an earlier run wrote, labelled with the
date it was measured. ``--authors``: a JSON of ``{"<method>": {"scores": [...], "repository":
..., "commit": ..., "note": ...}}`` from the authors' code run here, or ``{"<method>":
{"not run": "why"}}``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from benchmarks._shared.results import earlier_rows, save_table
from cl2gnn.cli import cmdline

# published numbers on Cora's public split: DGI's paper; BGRL's and MVGRL's as GraphMAE (Hou
# et al., KDD 2022, Table 1) reproduced them (BGRL's paper and code have no Cora; MVGRL's
# 86.8 is reported unreproducible, THUDM/GraphMAE#27); G-BT and GCA publish none
ANCHORS = {
    "dgi": (82.3, "Veličković et al., ICLR 2019, Table 2 (82.3 ± 0.6)"),
    "bgrl": (82.7, "GraphMAE's reproduction (Hou et al., KDD 2022, Table 1)"),
    "gbt": (None, "none published: its authors' code run here"),
    "gca": (None, "none published: its authors' code run here"),
    "mvgrl": (83.5, "GraphMAE's reproduction (Hou et al., KDD 2022, Table 1)"),
}
NOTES = (
    "Cora, Planetoid's public split (the anchors' split), one training run per seed, the "
    "library's probe (logistic regression on L2-normalised embeddings, C on the validation "
    "nodes). Each method's runs: python -m cl2gnn node --dataset Cora --method METHOD "
    "--protocol public --seed K --seeds 1 --baselines --json "
    "benchmarks/results/cells/zoo/METHOD_seedK.json, "
    "the method's default configuration (dgi: one GCN layer 512 wide, PReLU, row-normalised "
    "features, Adam 1e-3, up to 10,000 epochs, stopped once the training loss has not "
    "improved for 20 and the lowest-loss weights kept, its authors' rule). Target: within 1 "
    "point, or one standard deviation, of the anchor (or above it). BGRL's anchor is "
    "GraphMAE's reproduction, not BGRL's: its paper and code (nerdslab/bgrl) have no Cora "
    "configuration, and the library's Cora configuration is its own (512 wide, GRACE's Cora "
    "views: edges 0.2/0.4, features 0.3/0.4, 300 epochs, 30 warm-up; its code's batch-norm "
    "momentum, 0.99). MVGRL's anchor is GraphMAE's reproduction too (its paper's 86.8 is "
    "reported unreproducible, THUDM/GraphMAE#27); its configuration: one GCN layer 512 wide "
    "per view, the exact dense PPR diffusion (alpha 0.2), each step on 4 random windows of "
    "2,000 consecutive nodes as its code, up to 3,000 epochs under DGI's stopping rule. G-BT's "
    "configuration is its code's full-batch WikiCS one (none for the citation graphs): GCN "
    "512, batch norm (momentum 0.01), PReLU, GCN 256, 1,000 epochs, 100 warm-up, views "
    "0.2/0.2 and 0.1/0.1. GCA's is GRACE's Cora configuration with degree-centrality views, "
    "row-normalised features and feature columns weighed by presence, as its code, but for "
    "Cora's one all-zero feature column: GCA's code takes the log of its zero weight and, "
    "through the NaN, masks every column at 0.7 (its scores here); the library masks that "
    "column alone (zero_columns; results/node_gca_zero_columns). G-BT and GCA publish no Cora "
    "number: their anchor is their authors' code run here, on the same graph, split and "
    "probe. The authors' code (repository and commit in each row): "
    "benchmarks/configs/node_zoo_authors.json."
)


def mean_std(scores: list[float]) -> tuple[float, float]:
    return statistics.fmean(scores), statistics.pstdev(scores)


def verdict(score: float, std: float, anchor: float | None) -> str:
    """Met: within 1 point, or one standard deviation, of the anchor (or above it)."""
    if anchor is None:
        return "no anchor"
    gap = score - anchor
    return "met" if gap >= -max(1.0, std) else f"not met ({gap:+.2f})"


def merged(runs: Path, method: str) -> dict:
    """``<method>.json``, or the seeds run apart (``<method>_seed<k>.json``) as one result:
    every seed's score, the mean time per epoch, the baselines' scores pooled."""
    parts = [json.loads(p.read_text()) for p in sorted(runs.glob(f"{method}_seed*.json"))]
    if not parts:
        return json.loads((runs / f"{method}.json").read_text())
    scores = [v for part in parts for v in part["scores"]]
    result = {
        "scores": scores,
        "seeds": [seed for part in parts for seed in part["seeds"]],
        "epoch_ms": statistics.fmean(part["epoch_ms"] for part in parts),
        "baselines": {},
    }
    result["score_mean"], result["score_std"] = mean_std(scores)
    for name in parts[0].get("baselines", {}):
        pooled = [v for part in parts for v in part["baselines"][name]["scores"]]
        result["baselines"][name] = {"score_mean": statistics.fmean(pooled)}
    return result


def has_runs(runs: Path, method: str) -> bool:
    return (runs / f"{method}.json").exists() or any(runs.glob(f"{method}_seed*.json"))


def row(method: str, result: dict, authors: dict) -> list:
    score, std = result["score_mean"], result["score_std"]
    anchor, source = ANCHORS[method]
    mine = authors.get(method, {"not run": "not attempted"})
    if "scores" in mine:
        a_mean, a_std = mean_std(mine["scores"])
        here = f"{a_mean:.2f} ± {a_std:.2f} ({len(mine['scores'])})"
        if anchor is None:
            anchor, source = round(a_mean, 2), source
    else:
        here = "not run (notes)"
    baselines = result.get("baselines", {})
    raw = baselines.get("raw features", {}).get("score_mean")
    untrained = baselines.get("untrained encoder", {}).get("score_mean")
    return [
        method,
        anchor if anchor is not None else "—",
        source,
        f"{score:.2f} ± {std:.2f}",
        len(result["seeds"]),
        here,
        verdict(score, std, anchor),
        "—" if raw is None else round(raw, 2),
        "—" if untrained is None else round(untrained, 2),
    ]


def unmeasured(method: str) -> list:
    """The row of a method without results here (why: in the notes)."""
    anchor, source = ANCHORS[method]
    anchor = anchor if anchor is not None else "—"
    return [method, anchor, source, "not measured (notes)", 0, "not run (notes)", "—", "—", "—"]


def why_not(methods: list[str], authors: dict, missing: dict) -> str:
    """Why each method's cl2gnn run or authors' code has no result here, for the notes (too
    long for a cell)."""
    parts = []
    for method in methods:
        reasons = []
        if method in missing:
            reasons.append(f"cl2gnn not measured: {missing[method]}")
        if "scores" not in authors.get(method, {}):
            why = authors.get(method, {}).get("not run", "not attempted")
            reasons.append(f"authors' code not run: {why}")
        if reasons:
            parts.append(f"{method}: {'; '.join(reasons)}.")
    return " ".join(parts)


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True, help="the --json files' folder")
    parser.add_argument("--authors", type=Path, help="the authors' code's results (JSON)")
    parser.add_argument("--methods", nargs="+", default=list(ANCHORS))
    parser.add_argument(
        "--not-measured",
        type=Path,
        help='a JSON of {"<method>": "why"}: methods of --methods without results here',
    )
    parser.add_argument("--name", default="node_zoo")
    parser.add_argument("--notes", default=NOTES)
    args = parser.parse_args()
    authors = json.loads(args.authors.read_text()) if args.authors else {}
    missing = json.loads(args.not_measured.read_text()) if args.not_measured else {}
    earlier = earlier_rows(args.name)
    rows = []
    for method in args.methods:
        if method in missing:
            rows.append(unmeasured(method))
        elif has_runs(args.runs, method) or method not in earlier:
            rows.append(row(method, merged(args.runs, method), authors))
        else:  # measured by an earlier run whose files are not in --runs: its row stays
            rows.append(earlier[method])
    for r in rows:
        print(" | ".join(map(str, r)))
    path = save_table(
        args.name,
        "Reproduction",
        "The node zoo on Cora (public split) beside the anchors and the authors' code",
        [
            "method",
            "anchor",
            "anchor source",
            "cl2gnn (mean ± std)",
            "seeds",
            "authors' code here",
            "target",
            "raw features",
            "untrained encoder",
        ],
        rows,
        notes=f"{args.notes} {why_not(args.methods, authors, missing)}".strip(),
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
