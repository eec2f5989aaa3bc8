"""Every cl2gnn node-level method on a dataset (default Cora) under the GRACE, GCA and public
protocols: accuracy mean ± std over seeds, ms per training epoch, peak memory.

    python benchmarks/node_classification.py --dataset Cora --seeds 10 --out benchmarks/results
    python benchmarks/node_classification.py --speed --rounds 3 --epochs 100 --num-keys 256

Each method's result is written to ``<out>/node_<dataset>_<method>.json`` as soon as it
finishes; the Markdown table (with the published anchors) is printed at the end and
written to ``<out>/node_<dataset>.md``. ``--table-only`` rebuilds the table from the JSON
files already in ``<out>`` (e.g. after runs with different seed counts).

``--speed`` times training epochs with GRACE's configuration on the dataset for cl2gnn's
``grace`` (exact tiled InfoNCE), with ``--num-keys K`` also for ``grace`` with ``K``
sampled uniformity keys, and for GRACE's paper formulation of the same loss written
densely (two ``N × N`` exp-similarity matrices per direction, autograd), through the same
training loop, encoder and augmentations, alternating in rounds on the same machine.
``--num-keys K`` in the accuracy mode runs the InfoNCE-based methods with ``K`` sampled
keys (results in ``node_<dataset>_<method>_keysK.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import date
from pathlib import Path

from cl2gnn.node import METHODS, default_config, load_node_dataset, train_node_model
from cl2gnn.node.methods import SAMPLED_KEYS_METHODS

# published self-supervised anchors on Cora (accuracy, %)
ANCHORS = {
    "grace": {"GRACE (GRACE paper)": 83.3},
    "public": {
        "DGI": 82.3,
        "MVGRL": 83.5,
        "BGRL": 82.7,
        "CCA-SSG": 84.0,
        "GraphMAE": 84.2,
    },
}


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return next(s.split(":", 1)[1].strip() for s in out.splitlines() if "Model name" in s)
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def result_path(out: Path, dataset: str, method: str, num_keys: int | None) -> Path:
    keys = f"_keys{num_keys}" if num_keys else ""
    return out / f"node_{dataset}_{method}{keys}.json"


def run_one(
    dataset: str, method: str, seeds: int, epochs: int | None, out: Path, num_keys: int | None
) -> list:
    """One method in a fresh process, so that peak RSS is the method's own."""
    target = result_path(out, dataset, method, num_keys)
    code = (
        "import json, sys; from cl2gnn.node import run_node; "
        f"r = run_node({dataset!r}, {method!r}, ('grace', 'gca', 'public'), {seeds}, "
        f"{epochs!r}, progress=False, num_keys={num_keys!r}); "
        f"json.dump(r, open({str(target)!r}, 'w'))"
    )
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True)
    return json.loads(target.read_text())


def table(results: list, dataset: str, command: str) -> str:
    lines = [
        f"### Node classification, {dataset} ({date.today().isoformat()})",
        "",
        f"Command: `{command}`  ",
        f"Machine: {cpu_name()}, {os.cpu_count()} CPU cores, no GPU.  ",
        "Frozen encoder output + logistic regression; mean ± std over the seeds "
        "(each seed: its own training run and its own random split).",
        "",
        "| method | seeds | GRACE protocol (10/90) | GCA protocol (10/10/80) | public split | "
        "ms/epoch | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for per_method in results:
        by_protocol = {r["protocol"]: r for r in per_method}
        cells = [
            f"{by_protocol[p]['accuracy_mean']:.2f} ± {by_protocol[p]['accuracy_std']:.2f}"
            for p in ("grace", "gca", "public")
        ]
        first = per_method[0]
        keys = first["config"].get("num_keys")
        label = first["method"] + (f" ({keys} sampled keys)" if keys else "")
        lines.append(
            f"| {label} | {first['seeds']} | {' | '.join(cells)} | "
            f"{first['epoch_ms']:.0f} | "
            f"{first['peak_rss_mb']:.0f} |"
        )
    if dataset == "Cora":
        lines += ["", "Published anchors (their own papers' numbers, not re-run here):"]
        for protocol, anchors in ANCHORS.items():
            names = ", ".join(f"{k} {v}" for k, v in anchors.items())
            lines.append(f"- {protocol} protocol: {names}")
    return "\n".join(lines)


def grace_paper_objective(tau: float):
    """GRACE's loss as its paper writes it, dense: ``(z1, z2, h1, h2) -> loss``."""
    from operators import grace_chunked_loss  # benchmarks/operators.py

    def grace_paper(z1, z2, h1, h2):
        return grace_chunked_loss(z1, z2, tau, chunk=z1.size(0))

    return grace_paper


def run_speed(dataset: str, rounds: int, epochs: int, num_keys: int | None) -> list[dict]:
    data = load_node_dataset(dataset)
    config = default_config(data.name).with_overrides(epochs=epochs)
    objectives = {"cl2gnn grace": ("grace", config)}
    if num_keys:
        objectives[f"cl2gnn grace, {num_keys} keys"] = (
            "grace",
            config.with_overrides(num_keys=num_keys),
        )
    objectives["GRACE formulation"] = (grace_paper_objective(config.tau), config)
    rows = []
    for round_ in range(rounds):
        for name, (objective, cfg) in objectives.items():
            result = train_node_model(data, objective, cfg, seed=round_, progress=False)
            rows.append({"round": round_, "objective": name, "epoch_ms": result.epoch_ms})
            print(f"round {round_} {name}: {result.epoch_ms:.1f} ms/epoch", flush=True)
    return rows


def speed_table(rows: list[dict], dataset: str, epochs: int) -> str:
    """ms per epoch of each objective by round, and each one's ratio to GRACE's formulation."""
    ms = {(r["round"], r["objective"]): r["epoch_ms"] for r in rows}
    baseline = "GRACE formulation"
    names = list(dict.fromkeys(r["objective"] for r in rows))
    ours = [name for name in names if name != baseline]
    lines = [
        f"### Training speed, {dataset}, GRACE configuration ({date.today().isoformat()})",
        "",
        f"Command: `python {' '.join(sys.argv)}`  ",
        f"Machine: {cpu_name()}, {os.cpu_count()} CPU cores, no GPU; "
        f"mean ms per epoch over {epochs} epochs (the first left out).",
        "",
        "| round | "
        + " | ".join(names)
        + " | "
        + " | ".join(f"{n} / {baseline}" for n in ours)
        + " |",
        "|---|" + "---|" * (len(names) + len(ours)),
    ]
    for round_ in sorted({r["round"] for r in rows}):
        times = " | ".join(f"{ms[round_, n]:.1f}" for n in names)
        ratios = " | ".join(f"{ms[round_, n] / ms[round_, baseline]:.2f}" for n in ours)
        lines.append(f"| {round_} | {times} | {ratios} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="Cora")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--speed", action="store_true", help="time epochs (see above)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--num-keys", type=int, help="InfoNCE methods with this many sampled uniformity keys"
    )
    args = parser.parse_args()
    if args.num_keys and not args.speed and not set(args.methods) <= set(SAMPLED_KEYS_METHODS):
        parser.error(f"--num-keys applies to the methods {', '.join(SAMPLED_KEYS_METHODS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.speed:
        epochs = args.epochs or 100
        rows = run_speed(args.dataset, args.rounds, epochs, args.num_keys)
        (out / f"speed_{args.dataset}.json").write_text(json.dumps(rows, indent=1))
        print(speed_table(rows, args.dataset, epochs))
        return
    results = []
    for method in args.methods:
        target = result_path(out, args.dataset, method, args.num_keys)
        if args.table_only:
            if target.exists():
                results.append(json.loads(target.read_text()))
            continue
        results.append(run_one(args.dataset, method, args.seeds, args.epochs, out, args.num_keys))
        grace = next(r for r in results[-1] if r["protocol"] == "grace")
        print(f"{method}: {grace['accuracy_mean']:.2f} (GRACE protocol)", flush=True)
    command = "python " + " ".join(sys.argv)
    text = table(results, args.dataset, command)
    (out / f"node_{args.dataset}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
