"""Weighted kNN classification on frozen features (Wu et al., 2018; the SSL monitor):
cosine similarities to the training features, the ``k`` nearest vote with weight
``exp(s / t)``. Tiled over the test set; O(tile × N_train) memory."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


@torch.no_grad()
def weighted_knn_predict(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    num_classes: int,
    k: int = 200,
    t: float = 0.1,
    tile: int = 1024,
) -> Tensor:
    """Predicted labels ``[N_test]``."""
    if not 1 <= k:
        raise ValueError(f"k must be >= 1, got {k}")
    k = min(k, train_features.size(0))
    bank = F.normalize(train_features.float(), dim=1)
    test = F.normalize(test_features.float(), dim=1)
    labels = train_labels.to(bank.device)
    preds = []
    for start in range(0, test.size(0), tile):
        sim = test[start : start + tile] @ bank.T
        top, idx = sim.topk(k, dim=1)
        weights = (top / t).exp()
        votes = torch.zeros(sim.size(0), num_classes, device=sim.device)
        votes.scatter_add_(1, labels[idx], weights)
        preds.append(votes.argmax(1))
    return torch.cat(preds)


def knn_accuracy(train_features, train_labels, test_features, test_labels, k=200, t=0.1) -> float:
    """Fraction of test samples classified correctly."""
    num_classes = int(max(train_labels.max(), test_labels.max())) + 1
    pred = weighted_knn_predict(train_features, train_labels, test_features, num_classes, k, t)
    return float((pred.cpu() == test_labels.cpu()).float().mean())


def linear_probe_accuracy(train_features, train_labels, test_features, test_labels) -> float:
    """Offline linear probe: logistic regression on standardised frozen features."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(train_features.cpu().numpy(), train_labels.cpu().numpy())
    return float(model.score(test_features.cpu().numpy(), test_labels.cpu().numpy()))
