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
    configured = base.with_overrides(**changes)  # at once: the joint checks see every field
    configured.fan_outs()  # the built-in encoder's depth: one fan-out per layer, or refused
    return configured


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
    if folder is None:
        raise ValueError("resume: continues the run in save, a folder (--save DIR)")
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
    """One result dict per protocol: scores in percent (accuracy, or ROC-AUC for two
    classes), mean ± std over the seeds. ``method`` defaults to ``"auto"``: the candidate
    with the best validation score on the graph (:func:`~cl2gnn.node.evaluation.auto.choose_method`,
    on the first protocol's validation nodes of the first seeds, within ``auto_budget``
    seconds; its runs on those seeds are kept), named under ``"chosen"`` with every
    candidate's score under ``"candidates"``. ``protocols``
    default to ``("splits",)`` where the dataset ships splits, else ``("grace",)``;
    ``seeds`` to the number of shipped splits under ``splits`` (seed ``i`` trains on split
    ``i``), else 10; they run from ``first_seed`` (``first_seed … first_seed + seeds - 1``).
    The configuration is :func:`configure`'s of the method's default (of every candidate's
    with ``"auto"``): ``config``, a ``--config`` file's fields; ``out_channels`` and ``fields``,
    :class:`~cl2gnn.node.NodeConfig` fields, ``None`` keeping the default. ``baselines``
    adds each of :data:`BASELINES`, scored on the same splits, under ``"baselines"``.
    ``save``: a folder for each seed's trained encoder, embeddings, losses and state
    (``save/seed_<k>/``, :meth:`~cl2gnn.node.TrainResult.save`). ``run_folder`` (default:
    ``save``) is the run's own folder where ``save`` stages it: ``checkpoint_every`` writes
    each seed's state there every that many epochs (:func:`checkpoint_folder`), and
    ``resume`` continues each seed from the checkpoint it has there
    (:func:`resume_folders`; a named method only). ``select_epoch`` (always, with ``"auto"``):
    the training length chosen as ``"auto"`` chooses it, the checkpoint (0, 1/8, 1/4, 1/2 or
    all of the epochs) with the best validation mean on the scoring seeds
    (:func:`~cl2gnn.node.evaluation.auto.scoring_seeds`), every seed's model taken there
    (``"chosen_epoch"``; 0: the untrained encoder, training did not help).


    Under ``torchrun`` (a process group of several ranks, mini-batch training) every rank
    trains, rank 0 alone shows progress, probes and saves; the other ranks return ``[]``.
    They wait for each seed's probe up to ``probe_timeout`` seconds (default
    ``$CL2GNN_WAIT_TIMEOUT``, else 4 hours), on a gloo group of their own: the process
    group's timeout (NCCL's 10 minutes) would stop them while a large graph's probe runs."""
    wait_timeout(probe_timeout)  # a bad value fails before any work
    data = load_node_dataset(dataset, root)
    method = method or AUTO
    if method != AUTO:
        configuration = configure(default_config(data, method), config, out_channels, **fields)
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
    if select_epoch and (resume or checkpoint_every):
        raise ValueError(
            "resume and checkpoint_every: select_epoch hands back an earlier checkpoint than "
            "the run's state"
        )
    run_folder = save if run_folder is None else run_folder
    resumed = resume_folders(run_folder, seed_range) if resume else {}
    metric = metric_for(data.y)
    rank, _ = rank_and_world()
    progress = progress and rank == 0
    choice, auto = None, method == AUTO
    if auto or select_epoch:  # chosen on the first protocol's validation nodes
        choice = choose_method(
            data,
            scoring_seeds(data, first_seed, protocols[0]),
            protocol=protocols[0],
            # a named method's configuration is configured already
            changes=(lambda base: configure(base, config, out_channels, **fields))
            if auto
            else None,
            device=device,
            budget=auto_budget,
            listed=None if auto else [(method, method, configuration)],
        )
        method, configuration = choice.method, choice.config
    rows = (method, *BASELINES) if baselines else (method,)
    scores = {(p, row): [] for p in protocols for row in rows}
    epoch_ms, final_losses, epochs_run = [], [], []
    group = waiting_group(probe_timeout)  # None without a process group of several ranks
    try:
        for seed in tqdm(seed_range, desc=f"{data.name} {method}", disable=not progress):
            if choice is not None and seed in choice.results:  # trained while choosing
                result = choice.results[seed]
            elif choice is not None:  # the same checkpoint of the same run
                result = train_run(
                    data,
                    method,
                    configuration,
                    seed=seed,
                    device=device,
                    progress=False,
                    snapshot_at=(choice.epoch,),
                ).at_epoch(choice.epoch)
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
        }
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
