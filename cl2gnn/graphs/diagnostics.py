"""Spectral diagnostics of augmentation graphs (Proposition 2 of the message-passing paper).

``AlignConv`` with step ``α`` maps ``x -> x - 2α L x`` with ``L = I - Ā``; on a class
subgraph the component of ``x`` outside the null space of ``L`` therefore shrinks per step
by at most ``max(|1 - 2αλ_2|, |1 - 2αλ_max|)``, ``λ_2`` the algebraic connectivity
(``0`` for a disconnected class graph: no contraction to a single direction).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .._validation import as_edge_index


@dataclass
class ClassSpectrum:
    """Eigenvalue summary of one class subgraph's normalised Laplacian."""

    label: int
    num_nodes: int
    lambda_2: float  # algebraic connectivity; nan for a single node
    lambda_max: float

    def contraction_rate(self, step: float) -> float:
        """Per-step bound on the shrinkage of the distance to the null space of ``L``."""
        return max(abs(1 - 2 * step * self.lambda_2), abs(1 - 2 * step * self.lambda_max))


def normalized_laplacian(
    edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None
) -> np.ndarray:
    r"""Dense float64 ``L = I - (Ā + Āᵀ)/2``, ``Ā = D^{-1/2} A D^{-1/2}`` as ``AlignConv`` uses it.

    ``D`` is the weighted in-degree (PyG's ``gcn_norm`` convention); isolated nodes get
    ``Ā`` rows of zero.
    """
    edge_index, edge_weight = as_edge_index(
        edge_index, edge_weight, num_nodes, allow_empty=True, non_negative=True
    )
    src, dst = edge_index.cpu().numpy()
    w = np.ones(src.size) if edge_weight is None else edge_weight.detach().cpu().double().numpy()
    adj = np.zeros((num_nodes, num_nodes))
    np.add.at(adj, (dst, src), w)
    deg = adj.sum(1)
    dinv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    norm = dinv[:, None] * adj * dinv[None, :]
    return np.eye(num_nodes) - 0.5 * (norm + norm.T)


def class_spectra(
    edge_index: Tensor, labels: Tensor, edge_weight: Tensor | None = None
) -> list[ClassSpectrum]:
    """``λ_2`` and ``λ_max`` of each class's induced subgraph (Proposition 2's ``λ_Gk``)."""
    labels = labels.detach().cpu()
    n = labels.numel()
    edge_index, edge_weight = as_edge_index(
        edge_index, edge_weight, n, allow_empty=True, non_negative=True
    )
    edge_index = edge_index.cpu()
    out = []
    for label in torch.unique(labels).tolist():
        members = torch.nonzero(labels == label).view(-1)
        remap = torch.full((n,), -1, dtype=torch.long)
        remap[members] = torch.arange(members.numel())
        inside = (remap[edge_index[0]] >= 0) & (remap[edge_index[1]] >= 0)
        sub = remap[edge_index[:, inside]]
        w = None if edge_weight is None else edge_weight.detach().cpu()[inside]
        eig = np.linalg.eigvalsh(normalized_laplacian(sub, members.numel(), w))
        lam2 = float(eig[1]) if eig.size > 1 else float("nan")
        out.append(ClassSpectrum(int(label), int(members.numel()), lam2, float(eig[-1])))
    return out


def algebraic_connectivity(
    edge_index: Tensor, labels: Tensor, edge_weight: Tensor | None = None
) -> Tensor:
    """Per-class algebraic connectivity ``λ_Gk`` as a float64 tensor ordered by label."""
    spectra = class_spectra(edge_index, labels, edge_weight)
    return torch.tensor([s.lambda_2 for s in spectra], dtype=torch.float64)
