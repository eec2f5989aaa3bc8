"""What ``cl2gnn node`` prints: its first line, at once; then of the experiment's results,
the table (after the candidates' validation scores where method ``auto`` chose), where a
resumed run went on from, and the command that reproduces a choice."""

from __future__ import annotations

import argparse
import json
import os

from .catalogue import AUTO


def announce(args: argparse.Namespace) -> None:
    """The run's first line, at once: before torch loads (seconds) for the rules' check."""
    if args.no_progress or int(os.environ.get("RANK", "0")) != 0:
        return
    if args.method != AUTO:
        what = f"method {args.method}"
    elif args.quick:
        what = "the graph's default method"
    else:
        what = "method auto (choosing among candidates)"
    print(f"cl2gnn node: {args.dataset}, {what}; loading torch and the graph", flush=True)


def format_table(results: list[dict]) -> str:
    """The results (and their baselines, if any) as a plain-text table, after the
    candidates' validation scores where method ``auto`` chose."""
    from ..node.evaluation.auto import candidate_table

    table = []  # (dataset, row name, protocol, metric, score, seeds, ms/epoch)
    for r in results:
        name = f"auto: {r['chosen_as']}" if "chosen" in r else r["method"]
        if "chosen" not in r and r.get("chosen_epoch", r["epochs"]) != r["epochs"]:
            name += f" at epoch {r['chosen_epoch']}" + " (untrained)" * (r["chosen_epoch"] == 0)
        rows = [(name, r, f"{r['epoch_ms']:.1f}")]
        rows += [(label, b, "") for label, b in r.get("baselines", {}).items()]
        for label, row, ms in rows:
            score = f"{row['score_mean']:.2f} ± {row['score_std']:.2f}"
            table.append((r["dataset"], label, r["protocol"], r["metric"], score, r["seeds"], ms))
    width = max([26, *(len(row[1]) for row in table)])  # a chosen checkpoint's long name
    header = (
        f"{'dataset':18s} {'method':{width}s} {'protocol':8s} {'metric':8s} "
        f"{'score (%)':>14s} {'seeds':>5s} {'ms/epoch':>9s}"
    )
    lines = [candidate_table(r) + "\n" for r in results[:1] if "candidates" in r]
    lines += [header, "-" * len(header)]
    lines += [
        f"{dataset:18s} {name:{width}s} {protocol:8s} {metric:8s} {score:>14s} "
        f"{len(seeds):>5d} {ms:>9s}"
        for dataset, name, protocol, metric, score, seeds, ms in table
    ]
    first = results[0]
    if first.get("preset"):
        lines.append(f"configuration: {first['preset']}")
    if "resumed_from" in first:
        lines.append("resumed: " + ", ".join(resumed_line(first["resumed_from"])))
    if "reproduce" in first:
        lines.append(f"reproduce: {first['reproduce']}")
    return "\n".join(lines)


def resumed_line(resumed_from: dict[str, int]) -> list[str]:
    """Where each seed of a resumed run continued from, in words."""
    return [
        f"seed {seed} from epoch {epoch}" if epoch else f"seed {seed} from its start"
        for seed, epoch in resumed_from.items()
    ]


def reproduce(dataset: str, result: dict) -> str:
    """The ``cl2gnn node`` command that trains what was chosen (method ``auto``'s candidate,
    or ``--select-epoch``'s checkpoint) without choosing among candidates: the method, each
    field and option where the candidate's configuration is not the method's default for
    the graph (``--set``), and the checkpoint (``--epochs 0`` for the untrained encoder,
    ``--select-epoch`` for an earlier one: the same rule on the same seeds takes it
    again)."""
    import shlex

    from ..node.api import default_config
    from ..node.methods import method_class

    method = result.get("chosen_method", result["method"])
    chosen = dict(result["config"])
    base = default_config(result["dataset"], method).as_dict()
    options = method_class(method).Options
    defaults = {f: getattr(options(), f) for f in options.names()}
    settings = []
    for name, value in chosen.items():
        if name == "preset" or base.get(name, defaults.get(name)) == value:
            continue
        value = list(value) if isinstance(value, tuple) else value
        settings += ["--set", f"{name}={json.dumps(value)}"]
    epoch, epochs = result.get("chosen_epoch"), chosen["epochs"]
    if epoch == 0:
        settings += ["--epochs", "0"]
    elif epoch is not None and epoch != epochs:
        settings.append("--select-epoch")
    command = ["cl2gnn", "node", "--dataset", dataset, "--method", method, *settings]
    return shlex.join(command)
