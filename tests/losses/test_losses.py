"""Every loss against an independent brute-force formula (values and gradients), InfoNCE
against lightly's NTXentLoss, and Proposition 1's exact decomposition."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from cl2gnn.graphs import pair_graph
from cl2gnn.losses import (
    AlignmentUniformityLoss,
    AttentionInfoNCELoss,
    GeneralizedNTXentLoss,
    InfoNCELoss,
    KernelInfoNCELoss,
    MultiStageAlignmentLoss,
    MultiStageSimSiamLoss,
    RandomWalkLoss,
    SpectralContrastiveLoss,
    info_nce,
)
from cl2gnn.nn import AlignConv, MultiStageMemory, UniformAttention

from .. import reference as ref

f64 = torch.float64


def views(b, d, dtype=f64):
    return torch.randn(b, d, dtype=dtype), torch.randn(b, d, dtype=dtype)


def grads(fn, *tensors):
    tensors = [t.detach().clone().requires_grad_(True) for t in tensors]
    value = fn(*tensors)
    return value, torch.autograd.grad(value, tensors)


def assert_same(fn_a, fn_b, *tensors, atol=1e-10):
    va, ga = grads(fn_a, *tensors)
    vb, gb = grads(fn_b, *tensors)
    assert torch.allclose(va, vb, atol=atol), (float(va), float(vb))
    for a, b in zip(ga, gb, strict=True):
        assert torch.allclose(a, b, atol=atol)


@pytest.mark.parametrize("tau", [0.07, 0.2, 0.5, 1.0])
@pytest.mark.parametrize(("b", "d"), [(2, 3), (8, 16), (32, 64)])
def test_infonce_matches_lightly_ntxent(tau, b, d):
    lightly_loss = pytest.importorskip("lightly.loss")
    z1, z2 = views(b, d, torch.float32)
    ours = InfoNCELoss(temperature=tau)
    theirs = lightly_loss.NTXentLoss(temperature=tau)
    assert_same(ours, theirs, z1, z2, atol=1e-4)


@pytest.mark.parametrize("tau", [0.1, 0.5, 2.0])
@pytest.mark.parametrize(("b", "d"), [(2, 2), (7, 5)])
def test_infonce_matches_bruteforce_float64(tau, b, d):
    z1, z2 = views(b, d)
    assert_same(InfoNCELoss(tau), lambda a, c: ref.nt_xent(a, c, tau), z1, z2)
    decoupled = InfoNCELoss(tau, positive_in_denominator=False)
    if b > 1:
        assert_same(decoupled, lambda a, c: ref.decoupled_nt_xent(a, c, tau), z1, z2)
    # a check that can fail: another temperature gives another value
    assert not torch.allclose(InfoNCELoss(tau)(z1, z2), InfoNCELoss(tau * 1.5)(z1, z2))


@given(st.integers(2, 8), st.integers(1, 5), st.data())
def test_infonce_sampled_keys_matches_bruteforce(b, d, data):
    """``num_keys``: the uniformity sum over the drawn keys (self left out), scaled to the
    2b - 1 keys of the complete graph; the positive term stays exact."""
    n, tau = 2 * b, 0.4
    k = data.draw(st.integers(1, n - 1))
    z1, z2 = views(b, d)
    torch.manual_seed(k)
    ours = info_nce(z1, z2, temperature=tau, num_keys=k)
    torch.manual_seed(k)
    keys = torch.randperm(n)[:k].tolist()  # the draw info_nce makes
    x = F.normalize(torch.cat([z1, z2]), dim=1)
    total = 0.0
    for i in range(n):
        others = [j for j in keys if j != i]  # none for the key's own row when k == 1
        if others:
            partition = sum(torch.exp(x[i] @ x[j] / tau) for j in others)
            total += torch.log(partition * (n - 1) / len(others))
        total -= x[i] @ x[(i + b) % n] / tau
    assert torch.allclose(ours, total / n)
    assert torch.equal(
        info_nce(z1, z2, temperature=tau, num_keys=n), info_nce(z1, z2, temperature=tau)
    )
    torch.manual_seed(k)  # a NumPy integer (e.g. read from a config) draws the same keys
    assert torch.equal(info_nce(z1, z2, temperature=tau, num_keys=np.int64(k)), ours)


@given(st.integers(2, 6), st.integers(2, 4), st.integers(1, 6), st.floats(0.1, 1.0))
def test_infonce_multiview_sample_id(num_samples, num_views, d, tau):
    x = torch.randn(num_samples * num_views, d, dtype=f64)
    sample_id = torch.arange(num_samples).repeat(num_views)[torch.randperm(len(x))]
    ours = InfoNCELoss(tau)(x, sample_id=sample_id)
    assert torch.allclose(ours, ref.multi_positive_nt_xent(x, sample_id, tau))
    edge = InfoNCELoss(tau)(x, edge_index=pair_graph(sample_id=sample_id))
    assert torch.allclose(ours, edge)


@given(st.integers(2, 10), st.integers(1, 8), st.floats(0.05, 2.0))
def test_proposition_1_infonce_is_align_plus_uniform(b, d, tau):
    """Prop. 1: N·InfoNCE = AlignConv.energy/τ + UniformAttention.energy, exactly."""
    z1, z2 = views(b, d)
    x = F.normalize(torch.cat([z1, z2]), dim=1)
    edge_index = pair_graph(b, 2)
    align = AlignConv().energy(x, edge_index) / tau
    uniform = UniformAttention(temperature=tau).energy(x)
    assert torch.allclose(2 * b * ref.nt_xent(z1, z2, tau), align + uniform, atol=1e-10)
    # the alignment energy alone is the positive-pair distance: tr(xᵀLx) = Σ_pairs ‖Δ‖²
    pair_dist = ((x[:b] - x[b:]) ** 2).sum()
    assert torch.allclose(AlignConv().energy(x, edge_index), pair_dist)


def test_infonce_on_knn_positives_weighted_by_abar():
    """With an irregular graph the positive weights are Ā = D^-1/2 A D^-1/2."""
    x = torch.randn(7, 3, dtype=f64)
    edge_index = torch.tensor([[1, 0, 2, 0, 3, 4, 5, 6], [0, 1, 0, 2, 4, 3, 6, 5]])
    z = F.normalize(x, dim=1)
    abar = ref.sym_normalized(ref.dense_adjacency(edge_index, 7))
    s = z @ z.T / 0.3
    lse = torch.logsumexp(s.masked_fill(torch.eye(7, dtype=torch.bool), float("-inf")), 1)
    expected = (lse - (abar * s).sum(1)).mean()
    assert torch.allclose(info_nce(x, edge_index=edge_index, temperature=0.3), expected)


@pytest.mark.parametrize("tau", [0.2, 0.5])
def test_attention_infonce_positives_is_reference_code(tau):
    z1, z2 = views(6, 4)
    h1, h2 = views(6, 9)
    ours = AttentionInfoNCELoss(tau, beta=1.0, normalize="positives")
    assert_same(
        lambda a, c: ours(a, c, h1=h1, h2=h2),
        lambda a, c: ref.reference_attention_loss(a, c, h1, h2, tau),
        z1,
        z2,
    )


@pytest.mark.parametrize("normalize", ["negatives", "positives"])
def test_attention_infonce_beta_zero_is_infonce(normalize):
    z1, z2 = views(5, 3)
    loss = AttentionInfoNCELoss(0.4, beta=0.0, normalize=normalize)
    assert_same(loss, InfoNCELoss(0.4), z1, z2)
    assert not torch.allclose(AttentionInfoNCELoss(0.4, beta=3.0)(z1, z2), InfoNCELoss(0.4)(z1, z2))


def test_attention_infonce_negatives_matches_paper_weights():
    z1, z2 = views(4, 3)
    h1, h2 = views(4, 5)
    tau, beta = 0.5, 2.0
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    h = F.normalize(torch.cat([h1, h2]), dim=1)
    n, b = 8, 4
    total = 0.0
    for i in range(n):
        p = (i + b) % n
        mean = torch.stack([torch.exp(beta * h[i] @ h[k]) for k in range(n) if k != i]).mean()
        a = torch.exp(beta * h[i] @ h[p]) / mean
        lse = torch.logsumexp(torch.stack([z[i] @ z[j] / tau for j in range(n) if j != i]), 0)
        total = total + a * (lse - z[i] @ z[p] / tau)
    loss = AttentionInfoNCELoss(tau, beta)(z1, z2, h1=h1, h2=h2)
    assert torch.allclose(loss, total / n)


@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("tau", [0.3, 1.0])
def test_kernel_infonce_bruteforce(gamma, tau):
    z1, z2 = views(5, 4)
    assert_same(
        KernelInfoNCELoss(gamma, tau), lambda a, c: ref.kernel_nce(a, c, gamma, tau), z1, z2
    )


def test_gaussian_kernel_is_infonce_at_half_temperature():
    z1, z2 = views(9, 6)
    assert_same(KernelInfoNCELoss(gamma=2.0, temperature=0.6), InfoNCELoss(0.3), z1, z2)


def test_kernel_mixtures():
    z1, z2 = views(6, 8)
    lam, t1, t2 = 0.3, 0.5, 0.2
    simple_loss = KernelInfoNCELoss(1.0, t1, "simple", "loss", lam, 2.0, t2)(z1, z2)
    expected = lam * ref.kernel_nce(z1, z2, 1.0, t1) + (1 - lam) * ref.kernel_nce(z1, z2, 2.0, t2)
    assert torch.allclose(simple_loss, expected)
    concat_loss = KernelInfoNCELoss(1.0, t1, "concat", "loss", lam, 2.0, t2)(z1, z2)
    expected = lam * ref.kernel_nce(z1[:, :4], z2[:, :4], 1.0, t1) + (1 - lam) * ref.kernel_nce(
        z1[:, 4:], z2[:, 4:], 2.0, t2
    )
    assert torch.allclose(concat_loss, expected)
    # kernel form: one InfoNCE with K = λK1 + (1-λ)K2
    za = F.normalize(torch.cat([z1, z2]), dim=1)
    n, b = 12, 6

    def k(i, j):
        dist = (za[i] - za[j]).norm()
        return lam * torch.exp(-dist / t1) + (1 - lam) * torch.exp(-(dist**2) / t2)

    expected = torch.stack(
        [-torch.log(k(i, (i + b) % n) / sum(k(i, j) for j in range(n) if j != i)) for i in range(n)]
    ).mean()
    kernel_loss = KernelInfoNCELoss(1.0, t1, "simple", "kernel", lam, 2.0, t2)(z1, z2)
    assert torch.allclose(kernel_loss, expected)
    assert not torch.allclose(kernel_loss, simple_loss)


def test_kernel_loss_finite_gradient_at_coincident_views():
    z = torch.randn(4, 3, dtype=f64)
    _, (g1, g2) = grads(KernelInfoNCELoss(gamma=0.5), z, z.clone())
    assert torch.isfinite(g1).all() and torch.isfinite(g2).all()


@pytest.mark.parametrize("form", ["paper", "squared"])
def test_random_walk_bruteforce(form):
    z1, z2 = views(5, 3)
    assert_same(
        RandomWalkLoss(0.5, form),
        lambda a, c: ref.random_walk(a, c, 0.5, squared=form == "squared"),
        z1,
        z2,
    )


@pytest.mark.parametrize(("alpha", "t"), [(2.0, 2.0), (1.0, 1.0)])
def test_alignment_uniformity_bruteforce(alpha, t):
    z1, z2 = (F.normalize(v, dim=1) for v in views(6, 4))
    loss = AlignmentUniformityLoss(alpha, t, lam=0.7)
    assert torch.allclose(loss.alignment(z1, z2), ref.alignment(z1, z2, alpha))
    assert torch.allclose(loss.uniformity(z1), ref.uniformity(z1, t))
    expected = ref.alignment(z1, z2, alpha) + 0.7 * 0.5 * (
        ref.uniformity(z1, t) + ref.uniformity(z2, t)
    )
    assert torch.allclose(loss(z1, z2), expected)
    graph_form = loss(torch.cat([z1, z2]), sample_id=torch.arange(6).repeat(2))
    assert torch.allclose(
        graph_form,
        ref.alignment(z1, z2, alpha) + 0.7 * ref.uniformity(torch.cat([z1, z2]), t),
    )


def test_alignment_uniformity_rejects_unnormalised():
    z1, z2 = views(4, 3)
    with pytest.raises(ValueError, match="L2-normalised"):
        AlignmentUniformityLoss()(z1, z2)


@given(b=st.integers(2, 9), d=st.integers(1, 12))
def test_spectral_bruteforce(b, d):
    # d < b takes the d x d Gram-matrix path, d >= b the pair matrix: both against loops
    z1, z2 = views(b, d)
    assert_same(SpectralContrastiveLoss(), ref.spectral, z1, z2)


@given(n=st.integers(2, 8), d=st.integers(1, 10), mu=st.floats(0.5, 3.0), norm=st.booleans())
def test_spectral_graph_form_bruteforce(n, d, mu, norm):
    x = torch.randn(n, d, dtype=f64)
    edge_index = torch.randint(0, n, (2, 3 * n))
    weight = torch.rand(3 * n, dtype=f64) + 0.1
    loss = SpectralContrastiveLoss(mu=mu, normalize=norm)
    assert_same(
        lambda t: loss(t, edge_index=edge_index, edge_weight=weight),
        lambda t: ref.spectral_graph(t, edge_index, weight, mu, norm),
        x,
    )


def test_generalized_ntxent_defaults_are_ntxent():
    z1, z2 = views(7, 4)
    assert_same(GeneralizedNTXentLoss(0.3), InfoNCELoss(0.3), z1, z2)
    # Ψ(s) = s, η(t) = exp(-t): E_x Σ_y exp(-(t(x,y) - t(x,x⁺)))
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n, b = 14, 7
    expected = torch.stack(
        [
            sum(
                torch.exp(
                    -0.5 * ((z[i] - z[j]) ** 2).sum() + 0.5 * ((z[i] - z[(i + b) % n]) ** 2).sum()
                )
                for j in range(n)
                if j not in (i, (i + b) % n)
            )
            for i in range(n)
        ]
    ).mean()
    custom = GeneralizedNTXentLoss(psi=lambda s: s, eta=lambda t: torch.exp(-t))(z1, z2)
    assert torch.allclose(custom, expected)


def test_multistage_alignment_loss_and_memory_push():
    n, d, b = 10, 4, 5
    mem = MultiStageMemory(n, d, stages=2, dtype=f64)
    loss_fn = MultiStageAlignmentLoss(mem)
    ids = torch.tensor([1, 3, 5, 7, 9])
    z1, z2 = views(b, d)
    x1, x2 = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    first = loss_fn(z1, z2, ids)  # empty memory: the target is the other view
    assert torch.allclose(first, -0.5 * ((x1 * x2).sum(1) + (x2 * x1).sum(1)).mean())
    stored = 0.5 * (x1 + x2)
    assert torch.allclose(mem.bank[0, ids], stored)
    loss_fn.next_stage()
    y1, y2 = views(b, d)
    u1, u2 = F.normalize(y1, dim=1), F.normalize(y2, dim=1)
    second = loss_fn(y1, y2, ids)
    t1, t2 = 0.5 * (u2 + stored), 0.5 * (u1 + stored)
    assert torch.allclose(second, -0.5 * ((u1 * t1).sum(1) + (u2 * t2).sum(1)).mean())


def test_multistage_simsiam_loss():
    n, d, b = 8, 3, 4
    mem = MultiStageMemory(n, d, stages=2, warmup=1, dtype=f64)
    loss_fn = MultiStageSimSiamLoss(mem)
    ids = torch.arange(b)
    p1, p2, z1, z2 = (torch.randn(b, d, dtype=f64) for _ in range(4))
    plain = -0.5 * (F.cosine_similarity(p1, z2).mean() + F.cosine_similarity(p2, z1).mean())
    assert torch.allclose(loss_fn(p1, p2, z1, z2, ids), plain)  # warm-up stage
    loss_fn.next_stage()
    stored = 0.5 * (z1 + z2)
    q1, q2, w1, w2 = (torch.randn(b, d, dtype=f64) for _ in range(4))
    mixed = -0.5 * (
        F.cosine_similarity(q1, 0.5 * w2 + 0.5 * stored).mean()
        + F.cosine_similarity(q2, 0.5 * w1 + 0.5 * stored).mean()
    )
    assert torch.allclose(loss_fn(q1, q2, w1, w2, ids), mixed)
    # targets are detached: no gradient reaches z
    w1.requires_grad_(True)
    loss_fn(q1.requires_grad_(True), q2, w1, w2, ids).backward()
    assert w1.grad is None and q1.grad is not None
