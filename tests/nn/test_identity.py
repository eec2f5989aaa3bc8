"""The central contract: forward(x) == x - step * grad(energy)(x), checked by autograd in
float64, and every energy against an independent dense brute force."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from cl2gnn.graphs import pair_graph
from cl2gnn.losses import info_nce
from cl2gnn.nn import (
    OPERATORS,
    AlignConv,
    AttentionAlignConv,
    ContrastiveConv,
    MultiStageMemory,
    UniformAttention,
)

from .. import reference as ref
from ..conftest import identity_error, random_graph

f64 = torch.float64
TOL = 1e-10


REGISTERED = [
    pytest.param(example, id=f"{name}-{label}")
    for name, cls in sorted(OPERATORS.items())
    if hasattr(cls, "examples")  # one without fails test_modules' registry test
    for label, example in cls.examples(10, 3, torch.Generator().manual_seed(0)).items()
]


@pytest.mark.parametrize("example", REGISTERED)
def test_every_registered_example_satisfies_the_identity(example):
    """The contract, on every example call of every registered operator (a new operator
    brings its examples, and is checked here and by ``cl2gnn verify``)."""
    assert identity_error(example.build().double(), *example.args, **example.kwargs) < TOL


@st.composite
def graphs(draw, min_nodes=2):
    n = draw(st.integers(min_nodes, 12))
    d = draw(st.integers(1, 5))
    e = draw(st.integers(1, 3 * n))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen, dtype=f64)
    edge_index, weight = random_graph(n, e, gen)
    step = draw(st.floats(-1.0, 1.0, allow_nan=False))
    return x, edge_index, weight, step


@given(graphs())
def test_align_identity_and_energy(case):
    x, edge_index, weight, step = case
    op = AlignConv(step=step)
    assert identity_error(op, x, edge_index, weight) < TOL
    assert torch.allclose(op.energy(x, edge_index, weight), ref.align_energy(x, edge_index, weight))


def test_align_half_step_is_gcn_propagation():
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])  # a path, symmetric
    x = torch.randn(4, 3, dtype=f64)
    abar = ref.sym_normalized(ref.dense_adjacency(edge_index, 4))
    assert torch.allclose(AlignConv(step=0.5)(x, edge_index), abar @ x)
    step = 0.2
    expected = (1 - 2 * step) * x + 2 * step * abar @ x
    assert torch.allclose(AlignConv(step=step)(x, edge_index), expected)


@given(graphs(), st.booleans(), st.booleans(), st.floats(0.1, 2.0))
def test_uniform_dense_identity_and_energy(case, stop_gradient, self_loops, tau):
    x, _, _, step = case
    op = UniformAttention(
        step=step, temperature=tau, stop_gradient=stop_gradient, self_loops=self_loops
    )
    assert identity_error(op, x) < TOL
    expected = ref.uniform_energy(x, tau, stop_gradient, self_loops)
    assert torch.allclose(op.energy(x), expected)


@given(graphs(), st.booleans())
def test_uniform_sparse_identity_and_energy(case, stop_gradient):
    x, edge_index, _, step = case
    op = UniformAttention(step=step, temperature=0.7, stop_gradient=stop_gradient)
    assert identity_error(op, x, edge_index) < TOL
    n = x.size(0)
    counts = ref.dense_adjacency(edge_index, n)  # [i, j]: times j is a key of anchor i
    expected = ref.uniform_energy(x, 0.7, stop_gradient, self_loops=True, mask=counts)
    assert torch.allclose(op.energy(x, edge_index), expected)


@given(graphs(min_nodes=3), st.booleans())
def test_uniform_weights_and_exclusion(case, stop_gradient):
    x, edge_index, _, step = case
    n = x.size(0)
    weight = torch.rand(n, dtype=f64)
    op = UniformAttention(step=step, temperature=0.4, stop_gradient=stop_gradient)
    assert identity_error(op, x, weight=weight, exclude_index=edge_index) < TOL
    mask = ref.dense_adjacency(edge_index, n) == 0
    expected = ref.uniform_energy(x, 0.4, stop_gradient, mask=mask, weight=weight)
    assert torch.allclose(op.energy(x, weight=weight, exclude_index=edge_index), expected)


@given(graphs(min_nodes=2), st.booleans(), st.booleans(), st.data())
def test_uniform_sampled_keys_identity_and_energy(case, stop_gradient, self_loops, data):
    x, _, _, step = case
    n = x.size(0)
    k = data.draw(st.integers(1, n))
    keys = torch.randperm(n, generator=torch.Generator().manual_seed(k))[:k]
    weight = torch.rand(n, dtype=f64)
    op = UniformAttention(
        step=step, temperature=0.6, stop_gradient=stop_gradient, self_loops=self_loops
    )
    assert identity_error(op, x, weight=weight, keys=keys) < TOL
    # brute force: each anchor's keys, then its sum scaled to the complete graph's size
    mask = torch.zeros(n, n, dtype=torch.bool)
    mask[:, keys] = True
    if not self_loops:
        mask.fill_diagonal_(False)
    count = mask.sum(1).to(f64)
    scale = torch.log((n if self_loops else n - 1) / count[count > 0])
    expected = ref.uniform_energy(x, 0.6, stop_gradient, True, mask, weight)
    expected = expected + (weight[count > 0] * scale).sum()
    assert torch.allclose(op.energy(x, weight=weight, keys=keys), expected)


@pytest.mark.parametrize("stop_gradient", [False, True])
def test_uniform_all_keys_is_the_complete_graph(stop_gradient):
    x = torch.randn(10, 4, dtype=f64)
    op = UniformAttention(step=0.2, temperature=0.5, stop_gradient=stop_gradient)
    keys = torch.randperm(10)
    assert torch.allclose(op.energy(x, keys=keys), op.energy(x))
    assert torch.allclose(op(x, keys=keys), op(x))


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)])
def test_uniform_sampled_keys_low_precision(dtype, tol):
    x = torch.nn.functional.normalize(torch.randn(300, 16, dtype=f64), dim=1)
    keys = torch.randperm(300)[:64]
    op = UniformAttention(temperature=0.5)

    def energy_and_grad(features):
        features = features.detach().requires_grad_(True)
        value = op.energy(features, keys=keys)
        assert value.dtype == features.dtype
        return value.double(), torch.autograd.grad(value, features)[0].double()

    value, grad = energy_and_grad(x)
    low_value, low_grad = energy_and_grad(x.to(dtype))
    assert torch.isclose(low_value, value, rtol=tol)
    assert (low_grad - grad).abs().max() < tol * grad.abs().max()


def test_uniform_sampled_partition_is_unbiased():
    """Averaged over every K-subset, exp of a row's sampled log-partition is its exact
    partition sum (an enumeration, no sampling noise)."""
    n, k, tau = 6, 3, 0.5
    x = torch.randn(n, 3, dtype=f64)
    op = UniformAttention(temperature=tau)
    subsets = torch.combinations(torch.arange(n), k)
    sampled = torch.stack([op.row_logsumexp(x, keys=keys).exp() for keys in subsets])
    assert torch.allclose(sampled.mean(0), op.row_logsumexp(x).exp())
    assert not torch.allclose(sampled[0], op.row_logsumexp(x).exp())  # each draw varies


def test_uniform_closed_forms_eq7_eq8():
    x = torch.randn(9, 4, dtype=f64)
    alpha, tau = 0.3, 0.6
    logits = x @ x.T / tau
    logits.fill_diagonal_(float("-inf"))
    p = torch.softmax(logits, 1)
    eq7 = (1 + 2 * alpha / tau) * x - alpha / tau * (p + p.T) @ x
    eq8 = (1 + alpha / tau) * x - alpha / tau * p @ x
    assert torch.allclose(UniformAttention(alpha, tau)(x), eq7)
    assert torch.allclose(UniformAttention(alpha, tau, stop_gradient=True)(x), eq8)


@pytest.mark.parametrize("tau", [0.1, 0.5, 2.0])
def test_step_minus_tau_is_self_attention_eq12(tau):
    x = torch.randn(11, 5, dtype=f64)
    for self_loops in (True, False):
        op = UniformAttention(step=-tau, temperature=tau, stop_gradient=True, self_loops=self_loops)
        logits = x @ x.T / tau
        if not self_loops:
            logits.fill_diagonal_(float("-inf"))
        assert torch.allclose(op(x), torch.softmax(logits, 1) @ x, atol=1e-12)
    # and it is not self-attention for any other step: the check can fail
    assert not torch.allclose(UniformAttention(-tau / 2, tau, True, True)(x), op(x))


@given(
    graphs(min_nodes=2),
    st.sampled_from(["negatives", "positives"]),
    st.booleans(),
    st.floats(0.0, 3.0),
)
def test_attention_align_identity(case, normalize, stop_gradient, beta):
    x, edge_index, weight, step = case
    h = torch.randn(x.size(0), 3, dtype=f64)
    op = AttentionAlignConv(step=step, beta=beta, normalize=normalize, stop_gradient=stop_gradient)
    assert identity_error(op, x, edge_index, weight, h) < TOL


def test_attention_weights_match_definitions():
    n = 6
    x = torch.randn(n, 4, dtype=f64)
    h = torch.randn(n, 3, dtype=f64)
    edge_index = pair_graph(3, 2)
    hn = torch.nn.functional.normalize(h, dim=1)
    cos = hn @ hn.T
    beta = 1.7
    src, dst = edge_index
    neg = AttentionAlignConv(beta=beta).attention(x, edge_index, h=h)
    for e in range(edge_index.size(1)):
        i, j = int(dst[e]), int(src[e])
        mean = torch.stack([torch.exp(beta * cos[i, k]) for k in range(n) if k != i]).mean()
        assert torch.allclose(neg[e], torch.exp(beta * cos[i, j]) / mean)
    pos = AttentionAlignConv(beta=beta, normalize="positives").attention(x, edge_index, h=h)
    scores = torch.exp(beta * cos[dst, src])
    assert torch.allclose(pos, scores / scores.sum() * edge_index.size(1))


def test_attention_beta_zero_equals_align_on_regular_graph():
    x = torch.randn(8, 3, dtype=f64)
    edge_index = pair_graph(sample_id=torch.tensor([0, 0, 1, 1, 2, 2, 3, 3]))
    for normalize in ("negatives", "positives"):
        op = AttentionAlignConv(step=0.2, beta=0.0, normalize=normalize)
        assert torch.allclose(op.energy(x, edge_index), AlignConv().energy(x, edge_index))
        assert torch.allclose(op(x, edge_index), AlignConv(step=0.2)(x, edge_index))


def test_attention_stop_gradient_step_one_is_attention_aggregation():
    x = torch.randn(6, 3, dtype=f64)
    edge_index = pair_graph(2, 3)  # every node has 2 positives
    op = AttentionAlignConv(step=1.0, beta=2.0, normalize="negatives", stop_gradient=True)
    coef = op.attention(x, edge_index)
    dense = torch.zeros(6, 6, dtype=f64)
    dense[edge_index[1], edge_index[0]] = coef
    expected = (1 - dense.sum(1, keepdim=True)) * x + dense @ x
    assert torch.allclose(op(x, edge_index), expected)


@pytest.mark.parametrize("mode", ["mean", "max", "cat"])
@pytest.mark.parametrize("step", [0.3, 1.0])
def test_memory_identity(mode, step):
    n, d = 10, 4
    mem = MultiStageMemory(n, d, stages=3, mode=mode, step=step, dtype=f64).double()
    ids = torch.arange(n)
    mem.push(torch.randn(n, d, dtype=f64), ids)
    mem.next_stage()
    mem.push(torch.randn(5, d, dtype=f64), ids[:5])
    mem.next_stage()
    x = torch.randn(n, d, dtype=f64)
    assert identity_error(mem, x, ids) < TOL


def test_memory_mean_matches_reference_code_mix():
    """stages=2, mean: the target is ½ current + ½ previous stage, after the warm-up."""
    n, d = 6, 3
    mem = MultiStageMemory(n, d, stages=2, warmup=1, dtype=f64)
    ids = torch.arange(n)
    previous = torch.randn(n, d, dtype=f64)
    current = torch.randn(n, d, dtype=f64)
    assert torch.equal(mem.aggregate_stages(current, ids), current)  # warm-up
    mem.push(previous, ids)
    mem.next_stage()
    assert torch.allclose(mem.aggregate_stages(current, ids), 0.5 * current + 0.5 * previous)
    assert torch.allclose(mem(current, ids), 0.5 * current + 0.5 * previous)  # step=1
    mem.push(current, ids)  # the current stage is never read back while it is written
    assert torch.allclose(mem.aggregate_stages(current, ids), 0.5 * current + 0.5 * previous)


def test_memory_keeps_last_stages_only():
    n, d = 4, 2
    mem = MultiStageMemory(n, d, stages=3, dtype=f64)
    ids = torch.arange(n)
    feats = [torch.full((n, d), float(v), dtype=f64) for v in (1, 2, 3, 4)]
    for f in feats:
        mem.push(f, ids)
        mem.next_stage()
    now = torch.full((n, d), 10.0, dtype=f64)
    assert torch.allclose(
        mem.aggregate_stages(now, ids), torch.full((n, d), (10 + 4 + 3) / 3, dtype=f64)
    )


@given(graphs(min_nodes=2), st.booleans())
def test_contrastive_step_identity_and_composition(case, positive_in_denominator):
    x, _, _, step = case
    n = x.size(0) - x.size(0) % 2
    x = x[:n]
    if n < 4 and not positive_in_denominator:
        return  # no negatives left
    edge_index = pair_graph(n // 2, 2)
    op = ContrastiveConv(
        step=step, temperature=0.5, positive_in_denominator=positive_in_denominator
    )
    assert identity_error(op, x, edge_index) < TOL
    # eq. 10: the step is x + (2α/τ)((Ā+Āᵀ)/2 - (P+Pᵀ)/2) x
    abar = ref.sym_normalized(ref.dense_adjacency(edge_index, n))
    logits = x @ x.T / 0.5
    logits.fill_diagonal_(float("-inf"))
    if not positive_in_denominator:
        logits[abar > 0] = float("-inf")
    p = torch.softmax(logits, 1)
    expected = x + (2 * step / 0.5) * (0.5 * (abar + abar.T) - 0.5 * (p + p.T)) @ x
    assert torch.allclose(op(x, edge_index), expected)


def test_contrastive_sampled_keys_identity_and_loss():
    x = torch.nn.functional.normalize(torch.randn(12, 4, dtype=f64), dim=1)
    op = ContrastiveConv(step=0.3, temperature=0.5)
    torch.manual_seed(0)
    expected = 12 * info_nce(x[:6], x[6:], temperature=0.5, num_keys=5)
    torch.manual_seed(0)
    keys = torch.randperm(12)[:5]  # the draw info_nce made
    edge_index = pair_graph(6, 2)
    assert identity_error(op, x, edge_index, keys=keys) < TOL
    assert torch.allclose(op.energy(x, edge_index, keys=keys), expected)
    assert not torch.allclose(op.energy(x, edge_index), expected)
