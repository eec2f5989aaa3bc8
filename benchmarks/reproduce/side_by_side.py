"""cl2gnn's node methods beside their authors' code on the same graphs, splits and seeds
(issue 56): one row per method, graph and feature treatment, each side's mean ± std over the
seeds both sides ran, their difference, and that difference in pooled standard deviations.

    python -m cl2gnn node --dataset texas --method dgi --protocol splits --seed K --seeds 1 \\
        --baselines --json benchmarks/results/cells/side_by_side/dgi_texas_seedK.json
    python -m benchmarks.reproduce.side_by_side \\
        --runs benchmarks/results/cells/side_by_side \\
        --authors benchmarks/configs/authors_side_by_side.jsonl
                                                  # -> results/node_side_by_side.json

``--runs``: folders of ``cl2gnn node --json`` files, one seed or several each (a file with a
``variant``, a run of the method with something changed, is a row of its own against the
same records of the authors' code). ``--authors``: JSON lines,
one per run of the authors' code (its method, dataset, seed, the library probe's score of its
final embeddings, ``library_probe``, and its own evaluation's, ``authors_eval``; the harnesses
that write them run the authors' checkout unchanged but for the patches they list). A side
with no seeds is a dash; a row shows the other side over its own seeds.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

from benchmarks._shared.paired import pooled_std
from benchmarks._shared.results import save_table
from cl2gnn.cli import cmdline

COLUMNS = [
    "method",
    "graph",
    "features",
    "seeds",
    "cl2gnn",
    "authors' code",
    "difference",
    "difference / pooled std",
    "verdict",
    "authors' own evaluation",
    "raw features",
]
RAW, NORMALISED = "raw", "row-normalised"
RAW_BASELINE = "raw features"  # cl2gnn node --baselines: the probe on the features alone
NOTES = (
    "Both sides trained on the same graph (the library's loader), split and seed (on the "
    "heterophilous graphs, split k is seed k; on Cora, Planetoid's public split), and scored "
    "by the same probe: cl2gnn's (logistic regression on the L2-normalised embeddings, C on "
    "the validation nodes; accuracy in percent). The authors' code ran from their checkouts "
    "(repository and commit in each record of benchmarks/configs/authors_side_by_side.jsonl), "
    "through harnesses that hand it the library's graph and split and change no line of its "
    "training but for the CPU and today's packages; its final embeddings were scored by "
    "cl2gnn's probe. 'authors' own evaluation' is their script's own score: a different "
    "protocol (GCA's a random 10/10/80 split; DGI's and MVGRL's 50 Adam logistic regressions; "
    "G-BT's and BGRL's liblinear with C by cross-validation or validation), for reference "
    "only. 'raw features': the probe on the features alone (cl2gnn node --baselines). Mean "
    "± std over the seeds both sides ran, std the population's (ddof 0, as cl2gnn node "
    "reports it); difference = cl2gnn - authors; pooled std = sqrt((std_cl2gnn^2 + "
    "std_authors^2) / 2); verdict: within 1 pooled std or not. Configurations: each "
    "method's default_config, its authors' code's (DGI's and MVGRL's Cora code, G-BT's and "
    "BGRL's WikiCS configurations, GCA's the GRACE Cora entry with GCA's degree views and its "
    "code's feature handling), on both sides; on the heterophilous graphs GCA has none of its "
    "authors and both sides ran its Cora one (--config "
    "benchmarks/configs/side_by_side_gca.json). MVGRL on graphs under 2,000 nodes: the "
    "authors' 2,000-node windows are the whole graph (4 copies per step). On cornell, texas "
    "and wisconsin (37 to 51 test nodes: one node is 2 to 2.7 points) both codes sit near the "
    "majority class and far under the raw features: there a row says that both fail alike, "
    "not that they agree in detail. GCA's code gives a feature column whose "
    "centrality-weighted presence is 0 a NaN weight, and the NaN makes EVERY column's "
    "masking probability the cut-off, 0.7, in both views, whatever drop_feature says (Cora "
    "has one all-zero column; texas 203 such columns, cornell 121, wisconsin 90); cl2gnn "
    "masks such a column at 0.7 and the others by the formula (mean 0.3 and 0.4): the GCA "
    "rows compare cl2gnn's views with those their code actually draws. Not run here, for "
    "CPU time: BGRL (10,000 epochs a seed), G-BT on Cora, MVGRL's authors' code beyond texas "
    "seed 0 (about 5 minutes a seed here) and on Cora; a row with one side only says so."
)


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.pstdev(values)


def features_of(normalised: bool) -> str:
    return NORMALISED if normalised else RAW


def library_scores(runs: list[Path]) -> dict[tuple[str, str, str], dict[int, dict]]:
    """(method, graph, features) -> seed -> ``{"score": ..., "raw": ...}`` (the probe on the
    raw features, where the run scored ``--baselines``), from every ``--json`` file of the
    folders ``runs``; a file's ``variant`` (a run of the method with something changed, said
    there) follows its method's name in brackets. ``ValueError`` for a seed two files both
    hold."""
    scores: dict = defaultdict(dict)
    for path in sorted(p for folder in runs for p in folder.glob("*.json")):
        result = json.loads(path.read_text())
        try:
            normalised = result["config"]["normalize_features"]
            method = result["method"] + (f" ({result['variant']})" if "variant" in result else "")
            key = (method, result["dataset"], features_of(normalised))
        except KeyError as error:
            raise ValueError(f"{path}: not a cl2gnn node --json result (no {error})") from None
        raw = result.get("baselines", {}).get(RAW_BASELINE, {}).get("scores")
        for i, (seed, score) in enumerate(zip(result["seeds"], result["scores"], strict=True)):
            if seed in scores[key]:
                raise ValueError(f"{path}: seed {seed} of {key} is in another file too")
            scores[key][seed] = {"score": score, "raw": None if raw is None else raw[i]}
    return scores


def authors_records(path: Path) -> dict[tuple[str, str, str], dict[int, dict]]:
    """(method, graph, features) -> seed -> record, from the JSON lines of ``path`` (smoke
    runs left out); ``ValueError`` for a seed recorded twice."""
    records: dict = defaultdict(dict)
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("smoke"):
            continue
        missing = [
            f for f in ("method", "dataset", "seed", "library_probe", "config") if f not in record
        ]
        if missing or "features" not in record["config"]:
            raise ValueError(f"{path}:{number}: no field {(missing or ['config.features'])[0]}")
        features = features_of(record["config"]["features"] != RAW)
        key, seed = (record["method"], record["dataset"], features), record["seed"]
        if seed in records[key]:
            raise ValueError(f"{path}:{number}: seed {seed} of {key} recorded twice")
        records[key][seed] = record
    return records


def cell(values: list[float]) -> str:
    if not values:
        return "—"
    mean, std = mean_std(values)
    return f"{mean:.2f} ± {std:.2f}"


def signed(value: float) -> str:
    """``value`` to two decimals with its sign, a rounding to zero as ``+0.00``."""
    return f"{round(value, 2) + 0.0:+.2f}"


def compare(ours: list[float], theirs: list[float]) -> tuple[str, str, str]:
    """The difference (ours - theirs), that difference over the pooled std
    ``sqrt((std_ours^2 + std_theirs^2) / 2)`` and the verdict; dashes without both sides."""
    if not ours or not theirs:
        return "—", "—", "—"
    (a, _), (b, _) = mean_std(ours), mean_std(theirs)
    difference = a - b
    if len(ours) == 1:
        return signed(difference), "—", "one seed: no std"
    pooled = pooled_std(ours, theirs)
    if pooled == 0:
        verdict = "within 1 std" if signed(difference) == "+0.00" else "not within"
        return signed(difference), "—", verdict
    ratio = difference / pooled
    verdict = "within 1 std" if abs(ratio) <= 1 else "not within"
    return signed(difference), signed(ratio), verdict


def row(key: tuple[str, str, str], ours: dict[int, dict], theirs: dict[int, dict]) -> list:
    shared = sorted(ours.keys() & theirs.keys())
    # without the other side, each side over its own seeds
    ours_seeds = shared if theirs else sorted(ours)
    theirs_seeds = shared if ours else sorted(theirs)
    mine = [ours[s]["score"] for s in ours_seeds]
    raw = [ours[s]["raw"] for s in ours_seeds if ours[s]["raw"] is not None]
    their = [theirs[s]["library_probe"] for s in theirs_seeds]
    own = [theirs[s].get("authors_eval") for s in theirs_seeds]
    own = [value for value in own if value is not None]
    seeds = shared if ours and theirs else (ours_seeds or theirs_seeds)
    label = ",".join(map(str, seeds)) + (" (one side only)" if not (ours and theirs) else "")
    return [*key, label, cell(mine), cell(their), *compare(mine, their), cell(own), cell(raw)]


def table(runs: list[Path], authors: Path) -> list[list]:
    """The rows: each library run's variant against the authors' records of its method."""
    ours, theirs = library_scores(runs), authors_records(authors)
    keys = sorted(ours.keys() | theirs.keys(), key=lambda k: (k[1] != "Cora", k[1], k[0], k[2]))
    return [row(k, ours.get(k, {}), theirs.get((k[0].split(" (")[0], *k[1:]), {})) for k in keys]


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=Path, nargs="+", required=True, help="the --json files' folders"
    )
    parser.add_argument("--authors", type=Path, required=True, help="the authors' records")
    parser.add_argument("--name", default="node_side_by_side")
    args = parser.parse_args()
    with cmdline.user_errors(parser.prog):
        for folder in args.runs:
            if not folder.is_dir():
                raise ValueError(f"--runs {folder}: not a folder")
        rows = table(args.runs, args.authors)
        print("| " + " | ".join(COLUMNS) + " |")
        print("|---" * len(COLUMNS) + "|")
        for r in rows:
            print("| " + " | ".join(map(str, r)) + " |")
        path = save_table(
            args.name,
            "Reproduction",
            "cl2gnn beside its authors' code: the same graphs, splits, seeds and probe",
            COLUMNS,
            rows,
            notes=NOTES.strip(),
        )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
