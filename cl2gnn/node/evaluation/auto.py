"""Method ``"auto"``: the method and configuration chosen on the graph at hand, by the
validation scores of a few candidates (:func:`~cl2gnn.node.config.candidates`), never by
the graph's name and never from a test label.

Each candidate trains on the run's first seeds (the validation nodes of the first shipped
splits, or, on a graph without splits, the cross-validated score on the GRACE protocol's
training nodes) and is probed on validation nodes alone; the raw features and the untrained
encoder are scored the same way beside them. The best validation mean wins; its runs on
those seeds are kept, so that a run of ``n`` seeds costs ``n`` plus ``(candidates - 1) ×
seeds`` trainings. Under ``torchrun`` every rank trains, rank 0 probes and sends the choice to
the others."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch.distributed as dist
from torch_geometric.data import Data

from ...distributed import rank_and_world
from ...distributed.launch import release, waiting_group
from ..config import NodeConfig, config_from_dict
from ..methods import method_class
from ..presets import candidates
from ..result import TrainResult
from ..training.fit import train_run
from .probes import default_protocol, make_split, metric_for, num_splits, probe_scores

SCORING_SEEDS = 2  # the first seeds (splits) whose validation nodes choose
RAW, UNTRAINED = "raw features", "untrained encoder"


@dataclass
class Choice:
    """What :func:`choose_method` chose and why.

    Attributes:
        label, method, config: the chosen candidate.
        scores: each candidate's and baseline's mean validation score (percent), ``None``
            for a candidate that could not run here (see ``skipped``).
        seconds: each candidate's training time on the scoring seeds.
        skipped: candidate ``->`` why it did not run (a process group it does not span, the
            time budget, an option its method refuses).
        beats_baselines: whether the chosen candidate's validation score is above both the
            raw features' and the untrained encoder's.
        results: the chosen candidate's runs on the scoring seeds, by seed.
    """

    label: str
    method: str
    config: NodeConfig
    scores: dict[str, float | None]
    seconds: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    beats_baselines: bool = True
    results: dict[int, TrainResult] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "chosen": self.label,
            "chosen_method": self.method,
            "beats_baselines": self.beats_baselines,
            "candidates": {
                label: {
                    "validation": score,
                    "seconds": self.seconds.get(label),
                    "skipped": self.skipped.get(label),
                }
                for label, score in self.scores.items()
            },
        }

    def table(self) -> str:
        return candidate_table(self.as_dict())


def candidate_table(choice: dict) -> str:
    """The candidates' and baselines' validation scores of :meth:`Choice.as_dict`, the chosen
    one marked."""
    lines = [f"{'candidate':34s} {'validation (%)':>14s} {'seconds':>8s}"]
    for label, row in choice["candidates"].items():
        value = "—" if row["validation"] is None else f"{row['validation']:.2f}"
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.0f}"
        mark = "  <- chosen" if label == choice["chosen"] else ""
        note = f"  ({row['skipped']})" if row["skipped"] else ""
        lines.append(f"{label:34s} {value:>14s} {seconds:>8s}{mark}{note}")
    if not choice["beats_baselines"]:
        lines.append(
            f"no trained candidate beats the baselines on validation: {choice['chosen']!r} is "
            "the best trained one"
        )
    return "\n".join(lines)


def scoring_seeds(data: Data, seeds: Sequence[int]) -> list[int]:
    """The seeds whose validation nodes choose: the first :data:`SCORING_SEEDS` of the run's."""
    return list(seeds)[: max(1, min(SCORING_SEEDS, len(seeds)))]


def choose_method(
    data: Data,
    seeds: Sequence[int] = (0, 1),
    *,
    protocol: str | None = None,
    changes: dict | Callable[[NodeConfig], NodeConfig] | None = None,
    device: str = "cpu",
    budget: float | None = None,
    progress: bool = False,
) -> Choice:
    """Train each candidate of :func:`~cl2gnn.node.config.candidates` on ``data`` for
    ``seeds`` (the validation splits: split ``s`` for seed ``s`` under the ``splits``
    protocol, else the GRACE protocol's random split, scored by cross-validation on its
    training nodes) and choose the best validation mean.

    ``changes``: :class:`~cl2gnn.node.NodeConfig` fields set on every candidate (a
    mini-batch size, an epoch count), or a function of a candidate's configuration.
    ``budget`` (seconds): candidates are not started once that much time has gone (the first
    always runs). Reads no test label."""
    protocol = protocol or default_protocol(data)
    if protocol == "splits" and max(seeds) >= num_splits(data):
        raise ValueError(f"seeds: the graph ships {num_splits(data)} splits")
    rank, world = rank_and_world()
    metric = metric_for(data.y)
    y = data.y

    def validation(embeddings, seed: int) -> float:
        train, val, _ = make_split(protocol, data, seed)
        return probe_scores(embeddings, y, (train, val, None), seed, metric=metric)["validation"]

    if not callable(changes):
        options = {name: value for name, value in (changes or {}).items() if value is not None}

        def changes(base: NodeConfig) -> NodeConfig:
            return config_from_dict(options, base)

    scores, seconds, skipped, runs = {}, {}, {}, {}
    start, configs = time.perf_counter(), {}
    for label, method, base in candidates(data):
        config = changes(base)
        cls = method_class(method)
        if config.batch_size is not None:  # a mini-batch's negatives are its seeds
            config = replace(config, num_keys=None)
        if world > 1 and not cls.spans_ranks:
            scores[label], skipped[label] = None, "does not span the ranks of a process group"
            continue
        if budget is not None and runs and time.perf_counter() - start > budget:
            scores[label], skipped[label] = None, f"time budget of {budget:g} s spent"
            continue
        began, values = time.perf_counter(), []
        for seed in seeds:
            try:
                result = train_run(
                    data, method, config, seed=seed, device=device, progress=progress
                )
            except ValueError as error:  # a change this candidate's method refuses
                skipped[label] = str(error)
                break
            runs[label, seed] = result
            if rank == 0:
                values.append(validation(result.embeddings, seed))
        if label in skipped:
            scores[label] = None
            continue
        seconds[label] = time.perf_counter() - began
        scores[label] = float(np.mean(values)) if rank == 0 else None
        configs[label] = (method, config)
    if not configs:
        raise ValueError(
            "no candidate of method 'auto' can run here: "
            + "; ".join(f"{label}: {why}" for label, why in skipped.items())
        )
    # the baselines, on the same validation nodes (every rank builds the untrained encoder:
    # a mini-batch trainer's set-up is collective)
    method, config = configs[next(iter(configs))]
    untrained = [
        train_run(
            data, method, config.with_overrides(epochs=0), seed=seed, device=device, progress=False
        ).embeddings
        for seed in seeds
    ]
    chosen = None
    if rank == 0:
        scores[RAW] = float(np.mean([validation(data.x, seed) for seed in seeds]))
        scores[UNTRAINED] = float(
            np.mean([validation(h, seed) for h, seed in zip(untrained, seeds, strict=True)])
        )
        trained = {label: scores[label] for label in configs}
        chosen = max(trained, key=lambda label: (trained[label], -list(trained).index(label)))
    if world > 1:  # every rank trains the same choice
        group = waiting_group()
        try:
            shared = [chosen, scores]
            dist.broadcast_object_list(shared, src=0, group=group)
            chosen, scores = shared
        finally:
            release(group)
    method, config = configs[chosen]
    best_baseline = max(scores[RAW], scores[UNTRAINED])
    return Choice(
        chosen,
        method,
        config,
        scores,
        seconds,
        skipped,
        beats_baselines=scores[chosen] > best_baseline,
        results={seed: runs[chosen, seed] for seed in seeds},
    )
