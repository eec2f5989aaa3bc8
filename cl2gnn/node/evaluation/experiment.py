"""The experiment the ``cl2gnn node`` command runs (:func:`run_experiment`): a method (or
method ``auto``'s choice) trained with several seeds, every requested protocol evaluated on
the same embeddings, optionally beside the trivial baselines on the same splits; each
seed's run saved and resumable."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ...datasets import load_node_dataset
from ...distributed import rank_and_world
from ...distributed.launch import release, wait_for_rank_zero, wait_timeout, waiting_group
from ..api import AUTO, default_config, train_node_model
from ..config import check_field
from ..inputs import check_labels, check_seeds
from ..training.checkpoint import (
    CHECKPOINT,
    check_resumed_seeds,
    holds_checkpoint,
    write_checkpoint,
)
from ..training.fit import train_run
from ..training.plan import check_schedule
from .auto import BASELINES, RAW, STANDARDISED, UNTRAINED, choose_method, scoring_seeds
from .probes import default_protocol, make_split, metric_for, num_splits, probe_score

# an interrupted run's periodic checkpoints, in its folder: outside what a run stages
# (the command's cl2gnn/cli/run_folder.py), so that they outlive a killed run and resume
# finds them; the folder goes when the run has finished
CHECKPOINTS = ".cl2gnn.checkpoints"


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _summary(scores: list[float], metric: str) -> dict:
    return {
        "metric": metric,
        "score_mean": float(np.mean(scores)),
        "score_std": float(np.std(scores)),
        "scores": scores,
    }


def configure(base, config: dict | None = None, out_channels: int | None = None, **fields):
    """``base`` (a :class:`~cl2gnn.node.NodeConfig`) with the fields of ``config`` (a
    ``--config`` file's mapping), then ``fields`` (``None`` keeps a field). ``out_channels``
    sets the encoder's last layer's and the head's widths (the other layers keep their ratio
    to the last unless ``config`` or ``fields`` set ``hidden_channels``). ``ValueError``
    for fields that do not go together, before any training."""
    config = config or {}
    changes = {**config, **{k: v for k, v in fields.items() if v is not None}}
    if out_channels is not None:
        changes |= {
            "out_channels": out_channels,
            "proj_hidden": fields.get("proj_hidden") or out_channels,
        }
        given = "hidden_channels" in config or fields.get("hidden_channels") is not None
        if base.hidden_channels is not None and not given:  # the layers' ratio kept
            last = check_field("out_channels", config.get("out_channels", base.out_channels))
            changes["hidden_channels"] = out_channels * base.hidden_channels // last
    return base.with_overrides(**changes)  # at once: the joint checks see every field


def check_probe(data, protocols: tuple[str, ...], seeds: range) -> None:
    """Refuse, before any training, labels the probe cannot score under ``protocols`` for
    every seed in ``seeds``: not ``[N]`` integers from 0, a single class, or a training split
    whose classes are too small for the cross-validation that chooses ``C``."""
    check_labels(data.get("y"), data.num_nodes)
    name = getattr(data, "name", "the graph")
    for protocol in protocols:
        for seed in seeds:
            train, val, _ = make_split(protocol, data, seed)
            counts = torch.bincount(data.y[train])
            counts = counts[counts > 0]
            if counts.numel() < 2:
                raise ValueError(
                    f"the {protocol} protocol's split {seed} of {name} trains the probe on "
                    f"{counts.numel()} class: it needs at least 2"
                )
            if val is None and int(counts.min()) < 2:
                raise ValueError(
                    f"the {protocol} protocol's split {seed} of {name} has a class with "
                    f"{int(counts.min())} training node among {len(train)}: its cross-validation "
                    "of C needs at least 2 per class (try --protocol gca, which chooses C on "
                    "validation nodes)"
                )


def checkpoint_folder(folder: str | Path, seed: int) -> Path:
    """Where seed ``seed``'s periodic checkpoint goes while a run into ``folder`` trains."""
    return Path(folder) / CHECKPOINTS / f"seed_{seed}"


def resume_folders(folder: str | None, seeds: range) -> dict[int, Path]:
    """The folder each seed of ``seeds`` resumes from, in the run folder ``folder``: an
    interrupted run's periodic checkpoint (:func:`checkpoint_folder`) before a finished
    run's ``seed_<k>/``; ``ValueError`` if no seed has either."""
    check_resumed_seeds(Path(folder), seeds, CHECKPOINTS)
    found = {}
    for seed in seeds:
        for place in (checkpoint_folder(folder, seed), Path(folder) / f"seed_{seed}"):
            if holds_checkpoint(place):
                found[seed] = place
                break
    if not found:
        raise ValueError(
            f"{folder}: holds no seed_<k>/{CHECKPOINT} of seeds {seeds.start} to "
            f"{seeds.stop - 1} to resume from"
        )
    return found


def run_experiment(
    dataset: str,
    method: str | None = None,
    protocols: tuple[str, ...] | None = None,
    seeds: int | None = None,
    root: str | None = None,
    device: str = "cpu",
    progress: bool = True,
    baselines: bool = False,
    first_seed: int = 0,
    probe_timeout: float | None = None,
    config: dict | None = None,
    save: str | None = None,
    out_channels: int | None = None,
    auto_budget: float | None = None,
    resume: bool = False,
    checkpoint_every: int = 0,
    run_folder: str | Path | None = None,
    select_epoch: bool = False,
    **fields,
) -> list[dict]:
    """The experiment of ``cl2gnn node``: a method (or method ``"auto"``'s choice) trained
    for several seeds, its frozen embeddings probed under every protocol, beside the
    baselines where asked; one result dict per protocol, scores in percent (accuracy, or
    ROC-AUC for two classes), mean ± std over the seeds.

    Args:
        dataset: a graph's name (:func:`~cl2gnn.datasets.load_node_dataset`) or a ``.npz``
            path; a named graph takes its published configuration where it has one
            (``default_config(..., graph=name)``).
        method: a registered method, or ``"auto"`` (the default): the candidate, and its
            checkpoint, with the best validation score on the graph
            (:func:`~cl2gnn.node.evaluation.auto.choose_method`, on the first protocol's
            validation nodes of the first seeds; its runs on those seeds are kept, the
            other seeds stop at the chosen epoch), named under ``"chosen"`` with every
            candidate's score under ``"candidates"``.
        protocols: default ``("splits",)`` where the dataset ships splits, else
            ``("grace",)``.
        seeds: default the shipped splits' number under ``splits`` (seed ``i`` trains on
            split ``i``), else 10; they run from ``first_seed``.
        root: the data root (default ``$CL2GNN_DATA``, else download).
        device: where to train.
        progress: progress bars, and a line per auto candidate.
        baselines: also score each of :data:`BASELINES` on the same splits
            (``"baselines"``).
        first_seed: the first seed (``first_seed … first_seed + seeds - 1``).
        probe_timeout: under ``torchrun``, how long the other ranks wait for rank 0's probe
            of a seed (default ``$CL2GNN_WAIT_TIMEOUT``, else 4 hours), on a gloo group of
            their own (NCCL's 10 minutes would stop them while a large graph is probed).
        config: a ``--config`` file's (or ``--set``'s) fields over the method's
            configuration (:func:`configure`; every candidate's with ``"auto"``).
        save: a folder for each seed's encoder, embeddings, losses and state
            (``save/seed_<k>/``, :meth:`~cl2gnn.node.TrainResult.save`).
        out_channels: the encoder's last width and the head's (:func:`configure`).
        auto_budget: with ``"auto"``, start no candidate after this many seconds.
        resume: continue each seed from its checkpoint in ``run_folder``
            (:func:`resume_folders`; a named method only); the JSON's ``"resumed_from"``
            says where each seed went on from.
        checkpoint_every: write each seed's state there every that many epochs
            (:func:`checkpoint_folder`).
        run_folder: the run's own folder where ``save`` stages it (default: ``save``).
        select_epoch: the training length chosen as ``"auto"`` chooses it (always, with
            ``"auto"``): the checkpoint (0, 1/8, 1/4, 1/2 or all of the epochs) with the best
            validation mean on the scoring seeds, every seed's model taken there
            (``"chosen_epoch"``; 0: the untrained encoder, training did not help).
        fields: :class:`~cl2gnn.node.NodeConfig` fields and options (``None`` keeps one).

    What goes with what is :mod:`cl2gnn.node.training.plan`'s, refused before any training.
    Under ``torchrun`` (mini-batches across a process group) every rank trains, rank 0 alone
    shows progress, probes and saves; the other ranks return ``[]``."""
    wait_timeout(probe_timeout)  # a bad value fails before any work
    data = load_node_dataset(dataset, root)
    method = method or AUTO
    configuration = None
    if method != AUTO:  # the graph was named: its published configuration, where it has one
        base = default_config(data, method, graph=data.name)
        configuration = configure(base, config, out_channels, **fields)
    run_folder = save if run_folder is None else run_folder
    check_schedule(
        configuration,
        auto=method == AUTO,
        select_epoch=select_epoch,
        resume=resume,
        checkpoint_every=checkpoint_every,
        folder=run_folder is not None,
    )
    protocols = tuple(protocols or (default_protocol(data),))
    if seeds is None:
        seeds = num_splits(data) if "splits" in protocols else 10
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    if first_seed < 0:
        raise ValueError(f"first_seed must be >= 0, got {first_seed}")
    check_seeds(first_seed, seeds)  # every seed, before the first trains
    if "splits" in protocols and first_seed + seeds > num_splits(data):
        raise ValueError(
            f"seeds: {data.name} ships {num_splits(data)} splits, one per seed; got {seeds} seeds"
            + (f" from seed {first_seed}" if first_seed else "")
        )
    seed_range = range(first_seed, first_seed + seeds)
    check_probe(data, protocols, seed_range)
    resumed = resume_folders(run_folder, seed_range) if resume else {}
    metric = metric_for(data.y)
    rank, _ = rank_and_world()
    progress = progress and rank == 0
    if progress:  # what the run is, before its first epoch
        what = "method auto (choosing among candidates)" if method == AUTO else f"method {method}"
        tqdm.write(
            f"{data.name}: {data.num_nodes:,} nodes, {data.num_edges:,} edges; {what}, "
            f"{len(seed_range)} seeds, protocol {', '.join(protocols)}"
        )
    choice, auto = None, method == AUTO
    if auto or select_epoch:  # chosen on the first protocol's validation nodes
        choice = choose_method(
            data,
            scoring_seeds(data, first_seed, protocols[0]),
            graph=data.name,
            protocol=protocols[0],
            # a named method's configuration is configured already
            changes=(lambda base: configure(base, config, out_channels, **fields))
            if auto
            else None,
            device=device,
            budget=auto_budget,
            progress=progress,
            listed=None if auto else [(method, method, configuration)],
        )
        method, configuration = choice.method, choice.config
    rows = (method, *BASELINES) if baselines else (method,)
    scores = {(p, row): [] for p in protocols for row in rows}
    epoch_ms, final_losses, epochs_run, resumed_from = [], [], [], {}
    group = waiting_group(probe_timeout)  # None without a process group of several ranks
    try:
        for seed in tqdm(seed_range, desc=f"{data.name} {method}", disable=not progress):
            if choice is not None and seed in choice.results:  # trained while choosing
                result = choice.results[seed]
            elif choice is not None:  # the same checkpoint of the same run, stopped there
                result = train_run(
                    data,
                    method,
                    configuration,
                    seed=seed,
                    device=device,
                    progress=False,
                    stop_after=choice.epoch,
                )
            else:
                periodic = checkpoint_folder(run_folder, seed) if checkpoint_every else None
                result = train_node_model(
                    data,
                    method,
                    configuration,
                    seed=seed,
                    device=device,
                    progress=False,
                    resume=resumed.get(seed),
                    checkpoint=periodic,
                    checkpoint_every=checkpoint_every,
                )
            epoch_ms.append(result.epoch_ms)
            final_losses.append(result.losses[-1] if result.losses else float("nan"))
            epochs_run.append(len(result.losses))  # fewer than configured where patience stopped
            if result.resumed_from is not None:
                resumed_from[seed] = result.resumed_from
            embeddings = {method: result.embeddings}
            if baselines:
                untrained = configuration.with_overrides(epochs=0)
                embeddings[UNTRAINED] = train_node_model(
                    data, method, untrained, seed=seed, device=device, progress=False
                ).embeddings
            if rank == 0:
                _probe(scores, data, protocols, seed, metric, embeddings, baselines)
                if save is not None:
                    result.save(save)
                if checkpoint_every and result.checkpoint is not None:
                    # a finished seed: a killed run's --resume goes on with the next one
                    write_checkpoint(checkpoint_folder(run_folder, seed), result.checkpoint)
            wait_for_rank_zero(  # the others wait here, not in the next seed's collectives
                group,
                f"rank 0's probe of seed {seed}",
                "wait longer with --probe-timeout SECONDS (or $CL2GNN_WAIT_TIMEOUT)",
            )
    finally:
        release(group)
    if rank != 0:
        return []
    device_name = torch.cuda.get_device_name() if str(device).startswith("cuda") else "cpu"
    results = []
    for protocol in protocols:
        result = {
            "dataset": data.name,
            "method": method,
            "protocol": protocol,
            **_summary(scores[protocol, method], metric),
            "seeds": list(seed_range),
            "epoch_ms": float(np.mean(epoch_ms)),
            "epochs": configuration.epochs,
            "epochs_run": epochs_run,
            "final_loss": float(np.mean(final_losses)),
            "peak_rss_mb": peak_rss_mb(),
            "device": device_name,
            "config": configuration.as_dict(),
            # what the configuration started from (default_config's, or auto's candidate)
            "preset": configuration.preset if not auto else f"auto's candidate {choice.label!r}",
        }
        if resume:  # each seed's epoch it continued from (0: trained from its start)
            result["resumed_from"] = {str(seed): resumed_from.get(seed, 0) for seed in seed_range}
        if baselines:
            result["baselines"] = {
                row: _summary(scores[protocol, row], metric) for row in BASELINES
            }
        if auto:
            result |= choice.as_dict()
        elif choice is not None:
            label = choice.label
            result |= {
                "chosen_epoch": choice.epoch,
                "training_helped": choice.trained,
                "checkpoints": choice.checkpoints[label],
            }
        results.append(result)
    return results


def _probe(
    scores: dict,
    data,
    protocols: tuple[str, ...],
    seed: int,
    metric: str,
    embeddings: dict,
    baselines: bool,
) -> None:
    """Seed ``seed``'s probe score of each of ``embeddings`` (and of the raw features with
    ``baselines``) under every protocol, appended to ``scores[protocol, row]``."""
    for protocol in protocols:
        split = make_split(protocol, data, seed)
        probe = {"seed": seed, "metric": metric}
        for row, features in embeddings.items():
            scores[protocol, row].append(probe_score(features, data.y, split, **probe))
        if baselines:
            scores[protocol, RAW].append(probe_score(data.x, data.y, split, **probe))
            scores[protocol, STANDARDISED].append(
                probe_score(data.x, data.y, split, scaling="standard", **probe)
            )
