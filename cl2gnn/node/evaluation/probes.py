"""Frozen-embedding evaluation with logistic regression under the standard protocols.

* ``grace``: random 10 % train / 90 % test, L2-normalised embeddings, ``C`` by 5-fold
  cross-validation on the training nodes;
* ``gca``: random 10 % train / 10 % validation / 80 % test, test accuracy at the ``C`` with
  the best validation accuracy;
* ``public``: Planetoid's public split (20 per class / 500 / 1,000), ``C`` by validation;
* ``splits``: the dataset's own splits (``[N, splits]`` masks, e.g. the 10 geom-gcn splits of
  the heterophilous graphs), split ``seed`` for seed ``seed``, ``C`` by validation.

The score is the accuracy, or for two classes the ROC-AUC (:func:`metric_for`), in percent.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits
from torch import Tensor
from torch_geometric.data import Data

C_GRID = 2.0 ** np.arange(-6, 11, 2)


METRICS = ("accuracy", "roc_auc")


# grace: random 10/90, C by CV; gca: random 10/10/80; public: Planetoid's split;
# splits: the dataset's own shipped splits (C on their validation nodes)
PROTOCOLS = ("grace", "gca", "public", "splits")


def metric_for(y: Tensor) -> str:
    """``"roc_auc"`` for two classes (as Platonov et al. report minesweeper), else
    ``"accuracy"``."""
    return "roc_auc" if int(y.max()) + 1 == 2 else "accuracy"


def num_splits(data: Data) -> int:
    """How many splits the dataset ships as ``[N, splits]`` masks (0 if none)."""
    mask = getattr(data, "train_mask", None)
    return mask.size(1) if mask is not None and mask.dim() == 2 else 0


def default_protocol(data: Data) -> str:
    """``splits`` where the dataset ships splits, else ``grace``."""
    return "splits" if num_splits(data) else "grace"


def make_split(protocol: str, data: Data, seed: int) -> tuple[Tensor, Tensor | None, Tensor]:
    """``(train, validation or None, test)`` node indices."""
    n = data.num_nodes
    name = getattr(data, "name", "this dataset")
    masks = [getattr(data, key, None) for key in ("train_mask", "val_mask", "test_mask")]
    if protocol == "public":
        if masks[0] is None or masks[0].dim() != 1:
            raise ValueError(f"{name} has no public split")
        return tuple(torch.nonzero(m).view(-1) for m in masks)
    if protocol == "splits":
        if not num_splits(data):
            raise ValueError(f"{name} ships no splits; use the grace, gca or public protocol")
        if not 0 <= seed < num_splits(data):
            raise ValueError(f"{name} ships {num_splits(data)} splits; split {seed} does not exist")
        return tuple(torch.nonzero(m[:, seed]).view(-1) for m in masks)
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    n_train = round(0.1 * n)
    if protocol == "grace":
        return perm[:n_train], None, perm[n_train:]
    n_val = round(0.1 * n)
    return perm[:n_train], perm[n_train : n_train + n_val], perm[n_train + n_val :]


def _classifier(c: float) -> LogisticRegression:
    return LogisticRegression(C=c, max_iter=2000)


FEATURE_SCALINGS = ("l2", "standard", "none")


def probe_scores(
    embeddings: Tensor,
    y: Tensor,
    split,
    seed: int = 0,
    scaling: str = "l2",
    c_grid: np.ndarray = C_GRID,
    metric: str = "accuracy",
) -> dict[str, float]:
    """``{"validation", "test"}`` scores in percent (``metric``: ``"accuracy"``, or
    ``"roc_auc"`` for two classes) of a logistic regression on the embeddings,
    L2-normalised by default (``scaling="standard"``: zero mean, unit variance per feature;
    ``"none"``), ``C`` from ``c_grid`` chosen by the validation score or, without a
    validation set, 5-fold CV (then ``"validation"`` is the best cross-validated score).
    A split whose test nodes are ``None`` gives the validation score alone: no test label
    is read."""
    if scaling not in FEATURE_SCALINGS:
        raise ValueError(f"scaling must be one of {FEATURE_SCALINGS}, got {scaling!r}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    score = get_scorer(metric)
    train, val, test = split
    feats = embeddings.float().cpu()
    if scaling == "l2":
        feats = torch.nn.functional.normalize(feats, dim=1)
    feats = feats.numpy()
    if scaling == "standard":
        feats = StandardScaler().fit_transform(feats)
    labels = y.cpu().numpy()
    # one BLAS thread: beside torch's OpenMP workers, multi-threaded BLAS made these
    # small fits about 8x slower on a 2-core machine
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        if val is None:
            folds = min(5, int(np.bincount(labels[train]).min()))
            search = GridSearchCV(
                _classifier(1.0),
                {"C": c_grid},
                scoring=score,
                cv=StratifiedKFold(max(folds, 2), shuffle=True, random_state=seed),
            )
            search.fit(feats[train], labels[train])
            model, val_score = search.best_estimator_, search.best_score_
        else:
            fitted = [_classifier(c).fit(feats[train], labels[train]) for c in c_grid]
            scores = [score(m, feats[val], labels[val]) for m in fitted]
            model, val_score = fitted[int(np.argmax(scores))], max(scores)
    if test is None:
        return {"validation": 100.0 * float(val_score)}
    return {
        "validation": 100.0 * float(val_score),
        "test": 100.0 * float(score(model, feats[test], labels[test])),
    }


def probe_score(embeddings: Tensor, y: Tensor, split, seed: int = 0, **probe) -> float:
    """Test score in percent of :func:`probe_scores` (same options): the accuracy, or the
    ROC-AUC with ``metric="roc_auc"``."""
    return probe_scores(embeddings, y, split, seed, **probe)["test"]


def adam_probe_scores(
    embeddings: Tensor,
    y: Tensor,
    split,
    seed: int = 0,
    learning_rate: float = 0.01,
    weight_decay: float = 1e-4,
    epochs: int = 300,
) -> dict[str, float]:
    """``{"validation", "test"}`` accuracies in percent of the kind of probe behind CCA-SSG's
    and GraphMAE's public-split numbers: a linear layer on the raw embeddings, trained
    full-batch with Adam (the defaults are GraphMAE's Cora settings); the test accuracy is
    read at the epoch of best validation accuracy (the first such epoch). Needs a split with
    validation nodes; ``seed`` fixes the initial weights."""
    train, val, test = split
    if val is None:
        raise ValueError("the Adam probe chooses its epoch on validation nodes; the split has none")
    feats, labels = embeddings.detach().float().cpu(), y.cpu()
    with torch.random.fork_rng(devices=[]):  # seeded weights, the global generator untouched
        torch.manual_seed(seed)
        layer = torch.nn.Linear(feats.size(1), int(labels.max()) + 1)
    optimizer = torch.optim.Adam(layer.parameters(), lr=learning_rate, weight_decay=weight_decay)
    best = {"validation": -1.0, "test": 0.0}
    for _ in range(epochs):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(layer(feats[train]), labels[train]).backward()
        optimizer.step()
        with torch.no_grad():
            correct = layer(feats).argmax(1) == labels
        score = 100.0 * float(correct[val].float().mean())
        if score > best["validation"]:
            best = {"validation": score, "test": 100.0 * float(correct[test].float().mean())}
    return best
