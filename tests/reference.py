"""Independent brute-force float64 references: dense matrices and explicit loops.

Nothing here imports cl2gnn; each formula is written from the papers' definitions.
"""

from __future__ import annotations

import torch

f64 = torch.float64


def dense_adjacency(edge_index, n, weight=None):
    """A[i, j] = summed weight of edges j -> i."""
    adj = torch.zeros(n, n, dtype=f64)
    w = torch.ones(edge_index.size(1), dtype=f64) if weight is None else weight.to(f64)
    for e in range(edge_index.size(1)):
        adj[edge_index[1, e], edge_index[0, e]] += w[e]
    return adj


def sym_normalized(adj):
    deg = adj.sum(1)  # in-degree of each target
    dinv = torch.where(deg > 0, deg.clamp(min=1e-300).rsqrt(), torch.zeros_like(deg))
    return dinv[:, None] * adj * dinv[None, :]


def align_energy(x, edge_index, weight=None):
    abar = sym_normalized(dense_adjacency(edge_index, x.size(0), weight))
    lap = torch.eye(x.size(0), dtype=f64) - abar
    return torch.trace(x.T @ lap @ x)


def uniform_energy(x, tau, stop_gradient=False, self_loops=False, mask=None, weight=None):
    """Σ_i w_i log Σ_{j allowed} exp(x_i·x_j/τ) - c Σ_i w_i ||x_i||²/τ, loop over anchors.

    ``mask[i, j]`` allows key j for anchor i; an integer mask counts a key that many times
    (a multigraph's repeated edge)."""
    n = x.size(0)
    w = torch.ones(n, dtype=f64) if weight is None else weight
    keys = x.detach() if stop_gradient else x
    total = x.new_zeros(())
    for i in range(n):
        allowed = [
            j
            for j in range(n)
            if self_loops or j != i
            for _ in range(1 if mask is None else int(mask[i, j]))
        ]
        if allowed:
            s = torch.stack([x[i] @ keys[j] for j in allowed]) / tau
            total = total + w[i] * torch.logsumexp(s, 0)
    c = 0.5 if stop_gradient else 1.0
    return total - c * (w * (x * x).sum(1)).sum() / tau


def nt_xent(z1, z2, tau, decoupled=False):
    """SimCLR NT-Xent, mean over the 2B anchors, positive in the denominator (left out of it
    with ``decoupled``)."""
    z = torch.nn.functional.normalize(torch.cat([z1, z2]).to(f64), dim=1)
    n, b = z.size(0), z1.size(0)
    terms = []
    for i in range(n):
        p = (i + b) % n
        left_out = (i, p) if decoupled else (i,)
        others = torch.stack([z[i] @ z[j] / tau for j in range(n) if j not in left_out])
        terms.append(-(z[i] @ z[p]) / tau + torch.logsumexp(others, 0))
    return torch.stack(terms).mean()


def decoupled_nt_xent(z1, z2, tau):
    return nt_xent(z1, z2, tau, decoupled=True)


def multi_positive_nt_xent(x, sample_id, tau):
    """Average over each anchor's positives (SupCon 'out' form), mean over anchors."""
    z = torch.nn.functional.normalize(x.to(f64), dim=1)
    n = z.size(0)
    terms = []
    for i in range(n):
        pos = [j for j in range(n) if j != i and sample_id[j] == sample_id[i]]
        lse = torch.logsumexp(torch.stack([z[i] @ z[j] / tau for j in range(n) if j != i]), 0)
        terms.append(lse - torch.stack([z[i] @ z[j] / tau for j in pos]).mean())
    return torch.stack(terms).mean()


def reference_attention_loss(z1, z2, h1, h2, tau):
    """The PKU-ML reference code's loss for two views, re-derived: the -log-probability of
    each positive, weighted by exp(1 + cos(h_i, h_p)) normalised over the positives."""
    z = torch.nn.functional.normalize(torch.cat([z1, z2]).to(f64), dim=1)
    h = torch.nn.functional.normalize(torch.cat([h1, h2]).to(f64), dim=1)
    n, b = z.size(0), z1.size(0)
    logprobs, weights = [], []
    for i in range(n):
        p = (i + b) % n
        others = torch.stack([z[i] @ z[j] / tau for j in range(n) if j != i])
        logprobs.append(z[i] @ z[p] / tau - torch.logsumexp(others, 0))
        weights.append(torch.exp(1 + h[i] @ h[p]))
    weights = torch.stack(weights)
    return -(torch.stack(logprobs) * weights).sum() / weights.sum()


def kernel_nce(z1, z2, gamma, tau):
    z = torch.nn.functional.normalize(torch.cat([z1, z2]).to(f64), dim=1)
    n, b = z.size(0), z1.size(0)

    def k(a, c):
        return torch.exp(-((a - c).norm() ** gamma) / tau)

    terms = []
    for i in range(n):
        p = (i + b) % n
        denom = sum(k(z[i], z[j]) for j in range(n) if j != i)
        terms.append(-torch.log(k(z[i], z[p]) / denom))
    return torch.stack(terms).mean()


def random_walk(z1, z2, tau, squared=False):
    z = torch.nn.functional.normalize(torch.cat([z1, z2]).to(f64), dim=1)
    n, b = z.size(0), z1.size(0)
    w = torch.exp(z @ z.T / tau) * (1 - torch.eye(n, dtype=f64))
    p = w / w.sum(1, keepdim=True)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            pos = j == (i + b) % n
            term = (1 - p[i, j]) if pos else p[i, j]
            total = total + (term**2 if squared else term)
    return total / n


def alignment(x, y, alpha):
    return torch.stack([(x[i] - y[i]).norm() ** alpha for i in range(x.size(0))]).mean()


def uniformity(x, t):
    vals = [
        torch.exp(-t * (x[i] - x[j]).norm() ** 2)
        for i in range(x.size(0))
        for j in range(i + 1, x.size(0))
    ]
    return torch.log(torch.stack(vals).mean())


def spectral(z1, z2):
    a = torch.nn.functional.normalize(z1.to(f64), dim=1)
    c = torch.nn.functional.normalize(z2.to(f64), dim=1)
    b = a.size(0)
    pos = sum(a[i] @ c[i] for i in range(b)) / b
    neg = sum((a[i] @ c[j]) ** 2 for i in range(b) for j in range(b) if i != j) / (b * (b - 1))
    return -2 * pos + neg


def spectral_graph(x, edge_index, weight=None, mu=1.0, normalize=True):
    """Graph form: ``Ā``-weighted mean of the positive dot products, minus nothing else,
    plus the mean squared dot product over ordered pairs of distinct rows."""
    x = x.to(f64)
    if normalize:
        x = torch.nn.functional.normalize(x, dim=1) * mu**0.5
    abar = sym_normalized(dense_adjacency(edge_index, x.size(0), weight))
    n = x.size(0)
    pos = sum(abar[i, j] * (x[i] @ x[j]) for i in range(n) for j in range(n)) / abar.sum()
    neg = sum((x[i] @ x[j]) ** 2 for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    return -2 * pos + neg


def brute_knn(x, k, metric):
    """Sorted neighbor scores per row (best first), self excluded; scores, not indices,
    so ties between duplicates do not matter."""
    x = x.to(f64)
    if metric == "cosine":
        x = torch.nn.functional.normalize(x, dim=1)
    n = x.size(0)
    out = []
    for i in range(n):
        if metric == "l2":
            s = sorted(float(((x[i] - x[j]) ** 2).sum()) for j in range(n) if j != i)
        else:
            s = sorted((float(x[i] @ x[j]) for j in range(n) if j != i), reverse=True)
        out.append(s[:k])
    return torch.tensor(out, dtype=f64)


def pair_adjacency(n):
    """``A[i, j] = 1`` when anchor ``i`` and ``j`` are the two views (``i``, ``i + n``) of a
    sample: the positives of the two-view pair graph, ``2n × 2n``."""
    a = torch.zeros(2 * n, 2 * n, dtype=f64)
    for i in range(n):
        a[i, i + n] = a[i + n, i] = 1.0
    return a


def add_cross_view(a, n, source, target, weight=1.0):
    """Edge ``source -> target`` between samples: the other view of ``source`` becomes a
    positive of each view of ``target`` (with ``weight``, added to what is there)."""
    a[target, source + n] += weight
    a[target + n, source] += weight
    return a


def info_nce_on_graph(x, a, tau):
    """``mean_i [log Σ_{j≠i} exp(s_ij) - Σ_j Ā_ij s_ij]`` with ``s_ij = x_i·x_j/τ`` on
    L2-normalised rows, ``A[i, j]`` the weight of ``j`` as a positive of anchor ``i`` and
    ``Ā = D^-½ A D^-½``, ``D`` the anchors' summed weights."""
    x = torch.nn.functional.normalize(x.to(f64), dim=1)
    deg = a.sum(1)
    terms = []
    for i in range(x.size(0)):
        s = torch.stack([x[i] @ x[j] for j in range(x.size(0))]) / tau
        others = torch.cat([s[:i], s[i + 1 :]])
        positives = [j for j in range(x.size(0)) if a[i, j] > 0]
        positive = sum(a[i, j] / (deg[i] * deg[j]).sqrt() * s[j] for j in positives)
        terms.append(torch.logsumexp(others, 0) - positive)
    return torch.stack(terms).mean()


def attention_nt_xent(z1, z2, h1, h2, tau, beta):
    """Eq. 15 with the paper's normalisation: each anchor's NT-Xent term weighted by
    ``a_i = exp(β cos(h_i, h_p)) / mean_{k≠i} exp(β cos(h_i, h_k))`` (detached), ``p`` its
    other view; mean over the 2B anchors."""
    z = torch.nn.functional.normalize(torch.cat([z1, z2]).to(f64), dim=1)
    h = torch.nn.functional.normalize(torch.cat([h1, h2]).to(f64), dim=1).detach()
    n, b = z.size(0), z1.size(0)
    terms = []
    for i in range(n):
        p = (i + b) % n
        others = [j for j in range(n) if j != i]
        scores = torch.stack([torch.exp(beta * h[i] @ h[k]) for k in others])
        a = torch.exp(beta * h[i] @ h[p]) / scores.mean()
        lse = torch.logsumexp(torch.stack([z[i] @ z[j] for j in others]) / tau, 0)
        terms.append(a * (lse - z[i] @ z[p] / tau))
    return torch.stack(terms).mean()


def simsiam_loss(p1, p2, t1, t2):
    """``-½ [mean cos(p1, t2) + mean cos(p2, t1)]`` (targets taken as given)."""

    def cos(a, b):
        return torch.stack([a[i] @ b[i] / (a[i].norm() * b[i].norm()) for i in range(a.size(0))])

    return -0.5 * (cos(p1.to(f64), t2.to(f64)).mean() + cos(p2.to(f64), t1.to(f64)).mean())
