"""Method ``"auto"``: the method, configuration and training length chosen on the graph at
hand, by the validation scores of a few candidates (:func:`~cl2gnn.node.presets.candidates`)
at a few checkpoints of their runs, never by the graph's name and never from a test label.

Each candidate trains on the scoring seeds (:func:`scoring_seeds`: the validation nodes of
the first shipped splits, or, on a graph without splits, the cross-validated score on the
GRACE protocol's training nodes) and is probed on validation nodes alone at each of
:func:`checkpoint_epochs` of the same run: at its initialisation (epoch 0, the untrained
encoder), after 1/8, 1/4, 1/2 and all of its epochs. The raw features are scored the same
way beside them. The best (candidate, checkpoint) by validation mean wins; where epoch 0
wins, or ties the best trained checkpoint, training did not help on this graph, and the
untrained encoder is what is handed back, labelled so. The chosen runs on those seeds are
kept (at the chosen checkpoint), so that a run of ``n`` seeds costs ``n`` plus
``(candidates - 1) × seeds`` trainings, and no training more than before: only probes, at
most :data:`CHECKPOINT_FRACTIONS`' five per run. Under ``torchrun`` every rank trains,
rank 0 probes and sends the choice to the others."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch.distributed as dist
from torch_geometric.data import Data
from tqdm.auto import tqdm

from ...distributed import rank_and_world
from ...distributed.launch import release, waiting_group
from ..config import NodeConfig, config_from_dict
from ..presets import candidates
from ..result import TrainResult
from ..training.fit import train_run
from ..training.plan import check_run, for_own_encoder
from .probes import default_protocol, make_split, metric_for, num_splits, probe_scores

SCORING_SEEDS = 2  # the seeds (splits) whose validation nodes choose, from the run's first
# the checkpoints of a run scored on validation, as fractions of its epochs (0: untrained)
CHECKPOINT_FRACTIONS = (0, 1 / 8, 1 / 4, 1 / 2, 1)
# the trivial baselines a trained encoder must beat: the probe on the raw features
# (L2-normalised, as the embeddings are, and standardised), and the encoder with the
# method's configuration and read-out at its random initialisation
RAW, STANDARDISED, UNTRAINED = "raw features", "raw features, standardised", "untrained encoder"
BASELINES = (RAW, STANDARDISED, UNTRAINED)


def scoring_seeds(data: Data, first_seed: int, protocol: str | None = None) -> list[int]:
    """The seeds whose validation nodes choose, whatever the run's seed count:
    :data:`SCORING_SEEDS` of them from ``first_seed``, clipped to the graph's shipped splits
    under the ``splits`` protocol (``protocol``; default: the graph's)."""
    stop = first_seed + SCORING_SEEDS
    if (protocol or default_protocol(data)) == "splits":
        stop = min(stop, num_splits(data))
    if stop <= first_seed:
        raise ValueError(f"first_seed: the graph ships {num_splits(data)} splits, got {first_seed}")
    return list(range(first_seed, stop))


def checkpoint_epochs(epochs: int) -> list[int]:
    """The epochs of a run of ``epochs`` whose encoders are scored: each of
    :data:`CHECKPOINT_FRACTIONS` of it, rounded down, once."""
    return sorted({int(fraction * epochs) for fraction in CHECKPOINT_FRACTIONS})


@dataclass
class Choice:
    """What :func:`choose_method` chose and why.

    Attributes:
        label, method, config: the chosen candidate.
        epoch: the chosen checkpoint of its run (``config.epochs``: all of it; 0: the
            untrained encoder, training did not help).
        scores: each candidate's mean validation score (percent) at its best checkpoint,
            and each baseline's; ``None`` for a candidate that could not run here (see
            ``skipped``).
        checkpoints: each candidate's mean validation score at each checkpoint, by epoch.
        seconds: each candidate's training time on the scoring seeds.
        skipped: candidate ``->`` why it did not run (a process group it does not span, the
            time budget, an option its method refuses).
        beats_baselines: whether the chosen encoder is trained and its validation score is
            above both the raw features' and the untrained encoder's.
        results: the chosen candidate's runs on the scoring seeds at the chosen checkpoint
            (:meth:`~cl2gnn.node.result.TrainResult.at_epoch`), by seed.
    """

    label: str
    method: str
    config: NodeConfig
    scores: dict[str, float | None]
    epoch: int = 0
    checkpoints: dict[str, dict[int, float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    beats_baselines: bool = True
    results: dict[int, TrainResult] = field(default_factory=dict)

    @property
    def trained(self) -> bool:
        """Whether training helped: a checkpoint after epoch 0 was chosen."""
        return self.epoch > 0

    def as_dict(self) -> dict:
        return {
            "chosen": self.label,
            "chosen_method": self.method,
            "chosen_epoch": self.epoch,
            "chosen_as": chosen_as(self.label, self.epoch, self.config.epochs),
            "training_helped": self.trained,
            "beats_baselines": self.beats_baselines,
            "candidates": {
                label: {
                    "validation": score,
                    "checkpoints": self.checkpoints.get(label),
                    "seconds": self.seconds.get(label),
                    "skipped": self.skipped.get(label),
                }
                for label, score in self.scores.items()
            },
        }

    def table(self) -> str:
        return candidate_table(self.as_dict())


def chosen_as(label: str, epoch: int, epochs: int) -> str:
    """How a chosen (candidate, checkpoint) is named: the candidate, the epoch where it is
    not the last, the untrained encoder where it is epoch 0."""
    if epoch == 0:
        return f"{UNTRAINED} ({label}, epoch 0)"
    return label if epoch == epochs else f"{label} at epoch {epoch} of {epochs}"


def candidate_table(choice: dict) -> str:
    """The candidates' and baselines' validation scores of :meth:`Choice.as_dict` (each
    candidate's at its best checkpoint, and at every checkpoint), the chosen one marked."""
    lines = [f"{'candidate':34s} {'validation (%)':>14s} {'seconds':>8s}  checkpoints (epoch: %)"]
    for label, row in choice["candidates"].items():
        value = "—" if row["validation"] is None else f"{row['validation']:.2f}"
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.0f}"
        points = ", ".join(f"{e}: {v:.1f}" for e, v in (row.get("checkpoints") or {}).items())
        mark = "  <- chosen" if label == choice["chosen"] else ""
        note = f"  ({row['skipped']})" if row["skipped"] else ""
        lines.append(f"{label:34s} {value:>14s} {seconds:>8s}  {points}{mark}{note}")
    if not choice["training_helped"]:
        lines.append(
            f"training did not help on this graph: the {UNTRAINED} of {choice['chosen']!r} "
            "(epoch 0) scores best on validation, and is what is handed back"
        )
    elif not choice["beats_baselines"]:
        lines.append(
            f"no trained candidate beats the baselines on validation: {choice['chosen_as']!r} "
            "is the best trained one"
        )
    return "\n".join(lines)


def _from_rank_zero(value, world: int):
    """``value`` as rank 0 has it, on every rank of a process group of ``world`` ranks."""
    if world == 1:
        return value
    group = waiting_group()
    try:
        shared = [value]
        dist.broadcast_object_list(shared, src=0, group=group)
        return shared[0]
    finally:
        release(group)


def best_checkpoint(scores: dict[int, float]) -> int:
    """The epoch of the best validation score; among equal scores the untrained encoder
    (epoch 0: training that validation cannot tell apart from none has not earned its
    place), else the later."""
    return max(scores, key=lambda epoch: (scores[epoch], epoch == 0, epoch))


def choose_method(
    data: Data,
    seeds: Sequence[int] = (0, 1),
    *,
    graph: str | None = None,
    protocol: str | None = None,
    changes: dict | Callable[[NodeConfig], NodeConfig] | None = None,
    device: str = "cpu",
    budget: float | None = None,
    progress: bool = False,
    listed: Sequence[tuple[str, str | Callable, NodeConfig]] | None = None,
    **train_options,
) -> Choice:
    """Train each candidate of :func:`~cl2gnn.node.presets.candidates` for the graph named
    ``graph`` (``None``: a graph without a published configuration; or ``listed``:
    ``(label, method, configuration)``) on ``data`` for ``seeds`` (the validation splits:
    split ``s`` for seed ``s`` under the ``splits`` protocol, else the GRACE protocol's
    random split, scored by cross-validation on its training nodes), probe each run at
    :func:`checkpoint_epochs` and choose the best validation mean over (candidate,
    checkpoint) (:func:`best_checkpoint` within a candidate; the earlier listed among
    equal candidates).

    ``changes``: :class:`~cl2gnn.node.NodeConfig` fields set on every candidate (a
    mini-batch size, an epoch count), or a function of a candidate's configuration.
    ``budget`` (seconds): candidates are not started once that much time has gone (the first
    always runs). ``train_options``: the trainers' (``encoder``, ``augment``): with an
    encoder of one's own each candidate's configuration is for it
    (:func:`~cl2gnn.node.training.plan.for_own_encoder`), and each run trains a copy of it.
    ``progress``: each run's progress bar, and a line per candidate with its time and
    score. Reads no test label. The probes' cost is bounded: at most five per run
    (:data:`CHECKPOINT_FRACTIONS`); one run's snapshots are held at a time, each
    candidate's runs then kept at its best checkpoint only."""
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

    scores, checkpoints, seconds, skipped, runs = {}, {}, {}, {}, {}
    start, configs = time.perf_counter(), {}
    own_encoder = train_options.get("encoder") is not None
    for label, method, base in candidates(graph) if listed is None else listed:
        config = changes(base)
        if own_encoder and listed is None:
            config = for_own_encoder(config)
        if config.batch_size is not None:  # a mini-batch's negatives are its seeds
            config = replace(config, num_keys=None)
        if world > 1:  # a candidate the plan refuses across ranks is skipped, with its reason
            try:
                check_run(
                    data,
                    method,
                    config,
                    encoder=train_options.get("encoder"),
                    device=device,
                    distributed=config.distributed,
                )
            except ValueError as error:
                scores[label], skipped[label] = None, str(error)
                continue
        if budget is not None and configs and time.perf_counter() - start > budget:
            scores[label], skipped[label] = None, f"time budget of {budget:g} s spent"
            continue
        epochs = checkpoint_epochs(config.epochs)
        began, values = time.perf_counter(), {epoch: [] for epoch in epochs}
        for seed in seeds:
            try:
                result = train_run(
                    data,
                    method,
                    config,
                    seed=seed,
                    device=device,
                    progress=progress,
                    snapshot_at=epochs,
                    **train_options,
                )
            except ValueError as error:  # a change this candidate's method refuses
                skipped[label] = str(error)
                break
            runs[label, seed] = result
            if rank == 0:
                for epoch in epochs:
                    values[epoch].append(validation(result.snapshots[epoch], seed))
        if label in skipped:
            scores[label] = None
            continue
        seconds[label] = time.perf_counter() - began
        if rank == 0:
            checkpoints[label] = {epoch: float(np.mean(v)) for epoch, v in values.items()}
        best = _from_rank_zero(best_checkpoint(checkpoints[label]) if rank == 0 else None, world)
        if progress and rank == 0:
            tqdm.write(
                f"auto: {label}: {checkpoints[label][best]:.2f} on validation at epoch {best} "
                f"of {config.epochs} ({seconds[label]:.0f} s for {len(seeds)} seeds)"
            )
        for seed in seeds:  # the other checkpoints' embeddings are done with
            runs[label, seed] = runs[label, seed].at_epoch(best)
        scores[label] = checkpoints[label][best] if rank == 0 else None
        configs[label] = (method, config, best)
    if not configs:
        raise ValueError(
            "no candidate of method 'auto' can run here: "
            + "; ".join(f"{label}: {why}" for label, why in skipped.items())
        )
    chosen = None
    if rank == 0:  # the baselines, on the same validation nodes
        scores[RAW] = float(np.mean([validation(data.x, seed) for seed in seeds]))
        # the first candidate's epoch 0: the encoder at its initialisation
        scores[UNTRAINED] = checkpoints[next(iter(configs))][0]
        trained = {label: scores[label] for label in configs}
        chosen = max(  # among equal scores an untrained encoder, then the first listed
            trained,
            key=lambda label: (trained[label], configs[label][2] == 0, -list(trained).index(label)),
        )
    chosen, scores, checkpoints = _from_rank_zero((chosen, scores, checkpoints), world)
    method, config, epoch = configs[chosen]
    best_baseline = max(scores[RAW], scores[UNTRAINED])
    return Choice(
        chosen,
        method,
        config,
        scores,
        epoch,
        checkpoints,
        seconds,
        skipped,
        beats_baselines=epoch > 0 and scores[chosen] > best_baseline,
        results={seed: runs[chosen, seed] for seed in seeds},
    )
