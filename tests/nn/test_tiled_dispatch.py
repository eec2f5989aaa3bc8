"""One rule picks the exact form of every ``implementation="auto"``
(:func:`cl2gnn.nn._dispatch.exact_form`): its answers for CPU and CUDA sizes (asked on the
CPU; any other device gets the CPU's), every ``"auto"`` routed through it to the form it
names, every form equal to the float64 brute force, and the tiles' opt-in bfloat16 products
within their rounding bound, taken under oneDNN's bf16 setting (a spy, on any CPU).
Triton's own equality runs under the interpreter in ``test_tiled_triton.py``."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from cl2gnn.graphs import pair_graph
from cl2gnn.losses import InfoNCELoss, info_nce
from cl2gnn.nn import ContrastiveNorm, UniformAttention, _dispatch, tiled_triton
from cl2gnn.nn import contrastive_norm as contrastive_norm_module
from cl2gnn.nn import uniform as uniform_module
from cl2gnn.nn.tiled import tiled_row_logsumexp

from .. import reference as ref

CUDA, CPU = torch.device("cuda"), torch.device("cpu")
F32 = torch.float32
GRACE_CORA_VIEWS = 2 * 2708  # the measured case: dense beat the tiles 2.4× there
ARXIV_VIEWS = 2 * 169_343


@pytest.fixture
def triton_installed(monkeypatch):
    """The rule's answers as on a machine with Triton, whether or not this one has it."""
    monkeypatch.setattr(tiled_triton, "triton", object())


def dense_limit(dtype=F32) -> int:
    """The most rows whose dense form fits the budget."""
    element = 8 if dtype == torch.float64 else 4
    return math.isqrt(_dispatch.DENSE_MAX_BYTES // (_dispatch.DENSE_LIVE_MATRICES * element))


def form(rows, device=CUDA, dtype=F32, dim=128, **kwargs):
    return _dispatch.exact_form(rows, dim, device, dtype, free_bytes=2**40, **kwargs)


# the rule, asked on the CPU what CUDA and the CPU get


def test_cuda_is_dense_while_it_fits_then_triton(triton_installed):
    assert form(GRACE_CORA_VIEWS) == "dense"
    assert form(dense_limit()) == "dense"
    assert form(dense_limit() + 1) == "triton"
    assert form(ARXIV_VIEWS) == "triton"
    for dtype in (torch.bfloat16, torch.float16):
        assert form(ARXIV_VIEWS, dtype=dtype) == "triton"
    assert form(dense_limit(torch.float64), dtype=torch.float64) == "dense"
    assert form(dense_limit(torch.float64) + 1, dtype=torch.float64) == "tiled"  # no Triton


def test_cuda_dense_budget_is_capped_by_free_memory(triton_installed):
    need = _dispatch.dense_bytes(GRACE_CORA_VIEWS, F32)
    args = (GRACE_CORA_VIEWS, 128, CUDA, F32)
    assert _dispatch.exact_form(*args, free_bytes=need) == "dense"
    assert _dispatch.exact_form(*args, free_bytes=need - 1) == "triton"
    if not torch.cuda.is_available():  # nothing to read: the budget alone decides
        assert _dispatch.exact_form(*args) == "dense"


def test_cuda_free_memory_is_asked_once_per_size(triton_installed, monkeypatch):
    """A step of the same shape asks the driver nothing (a CUDA graph can capture it): the
    first call per size and device asks, the others keep its answer."""
    asked = []
    monkeypatch.setattr(
        _dispatch, "fits_on_device", lambda size, device: asked.append(size) or len(asked) > 1
    )
    _dispatch.forget_dense_fits()
    small, other = GRACE_CORA_VIEWS, GRACE_CORA_VIEWS + 2
    answers = [_dispatch.exact_form(small, 128, CUDA, F32) for _ in range(3)]
    assert answers == ["triton"] * 3  # the first answer (no room), kept
    assert _dispatch.exact_form(other, 128, CUDA, F32) == "dense"  # a new size asks
    assert asked == [_dispatch.dense_bytes(small, F32), _dispatch.dense_bytes(other, F32)]
    _dispatch.forget_dense_fits()
    assert _dispatch.exact_form(small, 128, CUDA, F32) == "dense"  # asked again
    _dispatch.forget_dense_fits()  # no answer of the stand-in left for other tests


def test_cuda_beyond_the_budget_takes_the_tiles_where_triton_cannot(triton_installed):
    big = dense_limit() + 1
    assert form(big, dim=tiled_triton.MAX_DIM) == "triton"
    assert form(big, dim=tiled_triton.MAX_DIM + 1) == "tiled"
    pairs = pair_graph(big // 2, 2)  # symmetric: the tiles take it, Triton takes none
    assert form(big, exclude_index=pairs) == "tiled"
    one_way = torch.tensor([[0], [1]])  # not symmetric: the dense form alone takes it
    assert form(big, exclude_index=one_way) == "dense"
    assert form(big, computation="attention") == "tiled"  # no Triton kernel for it


def test_cuda_without_triton_takes_the_tiles(monkeypatch):
    monkeypatch.setattr(tiled_triton, "triton", None)
    assert form(ARXIV_VIEWS) == "tiled"
    assert form(GRACE_CORA_VIEWS) == "dense"


@pytest.mark.parametrize("computation", _dispatch.COMPUTATIONS)
def test_cpu_keeps_dense_below_the_tiles_threshold_and_never_triton(computation, triton_installed):
    threshold = _dispatch.CPU_TILED_MIN_ROWS[computation]
    assert form(threshold - 1, CPU, computation=computation) == "dense"
    assert form(threshold, CPU, computation=computation) == "tiled"
    assert form(ARXIV_VIEWS, CPU, torch.bfloat16, computation=computation) == "tiled"
    one_way = torch.tensor([[0], [1]])
    assert form(threshold, CPU, exclude_index=one_way, computation=computation) == "dense"
    assert form(threshold, "cpu", computation=computation) == "tiled"  # a name will do


@pytest.mark.parametrize("device", ["meta", "mps", "xpu"])
@pytest.mark.parametrize("computation", _dispatch.COMPUTATIONS)
def test_a_device_other_than_cuda_gets_the_cpus_answer(
    device, computation, triton_installed, monkeypatch
):
    """The CUDA rule (dense while it fits the device's free memory, then Triton) is CUDA's
    alone: any other device type is answered as the CPU is, and its memory is never asked."""
    asked = []
    monkeypatch.setattr(_dispatch, "fits_on_device", lambda *args: asked.append(args) or True)
    threshold = _dispatch.CPU_TILED_MIN_ROWS[computation]
    for rows in (threshold - 1, threshold, dense_limit() + 1):
        cpu = form(rows, CPU, computation=computation)
        assert form(rows, torch.device(device), computation=computation) == cpu, rows
        answer = _dispatch.exact_form(rows, 128, device, F32, computation=computation)
        assert answer == cpu, rows
    assert asked == []


def test_bfloat16_products_ask_for_the_tiles_or_triton_of_float32_rows(monkeypatch):
    assert form(8, CPU, matmul_dtype="bfloat16") == "tiled"
    monkeypatch.setattr(tiled_triton, "triton", object())  # a machine with Triton
    assert form(8, CUDA, matmul_dtype="bfloat16") == "triton"  # at any size: dense has none
    assert form(8, CUDA, matmul_dtype="bfloat16", exclude_index=torch.ones(2, 1)) == "tiled"
    assert form(8, CUDA, dim=tiled_triton.MAX_DIM + 1, matmul_dtype="bfloat16") == "tiled"
    monkeypatch.setattr(tiled_triton, "triton", None)  # without: the tiles, which refuse it
    assert form(8, CUDA, matmul_dtype="bfloat16") == "tiled"
    assert form(8, CPU, torch.float64, matmul_dtype="bfloat16") == "dense"  # not float32


@given(
    rows=st.integers(2, 10**7),
    dim=st.integers(1, 600),
    device=st.sampled_from([CUDA, CPU]),
    dtype=st.sampled_from([torch.float16, torch.bfloat16, F32, torch.float64]),
    computation=st.sampled_from(list(_dispatch.COMPUTATIONS)),
)
def test_the_rule_answers_a_form_the_computation_has_and_grows_out_of_dense(
    rows, dim, device, dtype, computation
):
    args = (dim, device, dtype)
    answer = _dispatch.exact_form(rows, *args, computation=computation, free_bytes=2**40)
    assert answer in _dispatch.COMPUTATIONS[computation]
    if answer == "triton":
        assert tiled_triton.supports(device, dtype, dim)
    if answer != "dense":  # more rows never go back to dense
        assert _dispatch.exact_form(2 * rows, *args, computation=computation) != "dense"


# every "auto" goes through the rule, to the form it names


def spy_forms(monkeypatch, answer):
    """Make the rule answer ``answer``; record its questions and which form ran. Triton's
    stand-in is the float64-exact tiled function (no GPU here)."""
    asked, ran = [], []
    real_tiled = tiled_row_logsumexp
    real_apply = uniform_module.TiledRowLogSumExp.apply
    real_dense = UniformAttention._dense_row_logsumexp

    def rule(rows, dim, device, dtype, **kwargs):
        asked.append((rows, dim, torch.device(device), dtype, kwargs))
        return answer

    def triton(x, temperature, stop_gradient, self_loops, matmul_dtype):
        ran.append("triton")
        return real_tiled(x, temperature, stop_gradient, self_loops)

    class Tiled:  # the operator calls the tiles' autograd function itself
        @staticmethod
        def apply(*args):
            ran.append("tiled")
            return real_apply(*args)

    def dense(self, *args):
        ran.append("dense")
        return real_dense(self, *args)

    monkeypatch.setattr(_dispatch, "exact_form", rule)
    monkeypatch.setattr(uniform_module, "triton_row_logsumexp", triton)
    monkeypatch.setattr(uniform_module, "TiledRowLogSumExp", Tiled)
    monkeypatch.setattr(UniformAttention, "_dense_row_logsumexp", dense)
    return asked, ran


@pytest.mark.parametrize("answer", _dispatch.FORMS)
def test_auto_runs_the_form_the_rule_names(answer, monkeypatch):
    asked, ran = spy_forms(monkeypatch, answer)
    x = torch.randn(9, 4, dtype=torch.float64)
    energy = UniformAttention(temperature=0.4).energy(x)
    assert ran == [answer]
    assert asked == [(9, 4, CPU, torch.float64, {"exclude_index": None, "matmul_dtype": None})]
    assert torch.allclose(energy, ref.uniform_energy(x, 0.4))


@pytest.mark.parametrize("answer", _dispatch.FORMS)
@pytest.mark.parametrize("loss", [info_nce, InfoNCELoss(0.3)], ids=["info_nce", "InfoNCELoss"])
def test_infonce_auto_runs_the_form_the_rule_names(answer, loss, monkeypatch):
    asked, ran = spy_forms(monkeypatch, answer)
    z1, z2 = torch.randn(6, 5, dtype=torch.float64), torch.randn(6, 5, dtype=torch.float64)
    value = loss(z1, z2, temperature=0.3) if loss is info_nce else loss(z1, z2)
    assert ran == [answer] and [question[:2] for question in asked] == [(12, 5)]
    assert torch.allclose(value, ref.nt_xent(z1, z2, 0.3))


def test_bfloat16_products_reach_the_tiles_from_the_loss(monkeypatch):
    asked, ran = spy_forms(monkeypatch, "tiled")
    seen = []
    spied = uniform_module.TiledRowLogSumExp.apply  # spy_forms' stand-in

    class Tiled:  # and the product dtype the tiles are given, their last argument
        @staticmethod
        def apply(*args):
            seen.append(args[-1])
            return spied(*args)

    monkeypatch.setattr(uniform_module, "TiledRowLogSumExp", Tiled)
    InfoNCELoss(matmul_dtype="bfloat16")(torch.randn(40, 32), torch.randn(40, 32))
    assert asked[0][4]["matmul_dtype"] == "bfloat16" and seen == ["bfloat16"]
    assert ran == ["tiled"]


@pytest.mark.parametrize("answer", ["dense", "tiled"])
def test_contrastive_norm_auto_runs_the_form_the_rule_names(answer, monkeypatch):
    asked, ran = [], []
    real = contrastive_norm_module.tiled_attention

    def rule(rows, dim, device, dtype, **kwargs):
        asked.append(kwargs["computation"])
        return answer

    def tiled(*args):
        ran.append("tiled")
        return real(*args)

    monkeypatch.setattr(_dispatch, "exact_form", rule)
    monkeypatch.setattr(contrastive_norm_module, "tiled_attention", tiled)
    x = torch.randn(7, 3, dtype=torch.float64)
    out = ContrastiveNorm(3, 0.3, 0.5, normalize=False, norm=None).double()(x)
    attention = torch.softmax(x @ x.T / 0.5, dim=1)
    assert torch.allclose(out, x + 0.6 * (x - attention @ x))
    assert asked == ["attention"] and ran == (["tiled"] if answer == "tiled" else [])


# every form equals the float64 brute force


@pytest.mark.parametrize("implementation", ["dense", "tiled"])
@pytest.mark.parametrize("stop_gradient", [False, True])
@pytest.mark.parametrize("self_loops", [False, True])
@pytest.mark.parametrize("scale", [1.0, 30.0])  # 30: logits beyond the unshifted exp
def test_every_form_equals_the_bruteforce_reference(
    implementation, stop_gradient, self_loops, scale
):
    x = F.normalize(torch.randn(23, 5, dtype=torch.float64), dim=1) * scale
    weight = torch.rand(23, dtype=torch.float64)
    op = UniformAttention(
        temperature=0.5,
        stop_gradient=stop_gradient,
        self_loops=self_loops,
        implementation=implementation,
        tile_size=6,
    )
    value, grad = energy_and_grad(lambda v: op.energy(v, weight=weight), x)
    expected, grad_ref = energy_and_grad(
        lambda v: ref.uniform_energy(v, 0.5, stop_gradient, self_loops, weight=weight), x
    )
    assert torch.allclose(value, expected, rtol=1e-12, atol=1e-9)
    assert torch.allclose(grad, grad_ref, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("implementation", ["auto", "dense", "tiled"])
def test_a_row_without_keys_adds_its_norm_term_alone(implementation):
    # every key of row 0 excluded: its log-partition is empty, the dense form's logsumexp of
    # nothing but -inf must not reach the energy or its gradient as NaN
    x = torch.randn(5, 3, dtype=torch.float64)
    exclude = torch.tensor([[0, 0, 0, 0, 1, 2, 3, 4], [1, 2, 3, 4, 0, 0, 0, 0]])
    mask = torch.ones(5, 5, dtype=torch.long).fill_diagonal_(0)
    mask[0] = mask[:, 0] = 0
    op = UniformAttention(temperature=0.5, implementation=implementation, tile_size=2)
    value, grad = energy_and_grad(lambda v: op.energy(v, exclude_index=exclude), x)
    expected, grad_ref = energy_and_grad(lambda v: ref.uniform_energy(v, 0.5, mask=mask), x)
    assert torch.allclose(value, expected) and torch.allclose(grad, grad_ref)


def energy_and_grad(fn, x):
    x = x.detach().clone().requires_grad_(True)
    value = fn(x)
    (grad,) = torch.autograd.grad(value, x)
    return value.detach(), grad


# the tiles' bfloat16 products, against float64

U_BF16 = 2.0**-8  # bfloat16's unit roundoff (8 significant bits)
U_F32 = 2.0**-24
BF16_GEMM = torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()


def lse_and_grad_reference(x, tau, weight, stop_gradient):
    """float64 ``lse``, the gradient of ``Σ w_i lse_i``, and ``(1/τ) Σ_j Q_ij |x_j|``, the
    sum of the gradient's terms' magnitudes (``Q = w_i P_ij (+ w_j P_ji)``, non-negative)."""
    exact = x.double().requires_grad_(True)
    keys = exact.detach() if stop_gradient else exact
    logits = (exact @ keys.T / tau).fill_diagonal_(float("-inf"))
    lse = torch.logsumexp(logits, 1)
    (grad,) = torch.autograd.grad(lse, exact, grad_outputs=weight.double())
    p = torch.softmax(logits.detach(), 1)
    q = weight.double()[:, None] * p
    if not stop_gradient:
        q = q + q.T
    return lse.detach(), grad, q @ exact.detach().abs() / tau


def bf16_lse_and_grad(x, tau, weight, stop_gradient, matmul_dtype, tile=128):
    rows = x.clone().requires_grad_(True)
    lse = tiled_row_logsumexp(rows, tau, stop_gradient, tile_size=tile, matmul_dtype=matmul_dtype)
    (grad,) = torch.autograd.grad(lse, rows, grad_outputs=weight)
    return lse.detach().double(), grad.double()


@pytest.mark.parametrize("stop_gradient", [False, True])
@pytest.mark.parametrize("tau", [0.25, 1.0])
def test_bfloat16_products_stay_within_their_rounding_bound(stop_gradient, tau):
    # Each product rounds both operands to bfloat16 (relative u = 2⁻⁸ each) and
    # accumulates d terms in float32, so a logit is off by at most
    # η = (2u + (d + 2) u₃₂) max_ij |x_i|·|x_j| / τ, and the log-partition, a float32 sum of
    # N terms, by η + (N + 2) u₃₂. The backward's weights P_ij = exp(S_ij - lse_i) are then
    # off by a factor exp(2η + (N + 4) u₃₂), and their product with x_j rounds both to
    # bfloat16 once more: each gradient entry is off by at most
    # c = exp(2η + (N + 4) u₃₂) (1 + u)² - 1 times the sum of its terms' magnitudes.
    # (Unit rows: η is 8u at τ = 0.25; logits beyond the unshifted exp make the bound
    # vacuous, and the next test takes them.)
    n, d = 300, 64
    x = F.normalize(torch.randn(n, d), dim=1)
    weight = torch.rand(n)
    lse_ref, grad_ref, magnitude = lse_and_grad_reference(x, tau, weight, stop_gradient)
    lse, grad = bf16_lse_and_grad(x, tau, weight, stop_gradient, "bfloat16")
    largest = float((x.double().abs() @ x.double().abs().T).max() / tau)
    eta = (2 * U_BF16 + (d + 2) * U_F32) * largest
    assert float((lse - lse_ref).abs().max()) <= eta + (n + 2) * U_F32
    c = math.exp(2 * eta + (n + 4) * U_F32) * (1 + U_BF16) ** 2 - 1
    assert bool(((grad - grad_ref).abs() <= c * magnitude).all())


@pytest.mark.parametrize("stop_gradient", [False, True])
@pytest.mark.parametrize("scale", [1.0, 8.0])  # 8: beyond the unshifted exp at τ = 0.5
def test_bfloat16_products_of_exact_rows_round_the_attention_weights_alone(stop_gradient, scale):
    # Rows that bfloat16 holds exactly, τ a power of two: every product of two rows is exact
    # in float32, so the log-partition is float32-exact (η = (d + 2) u₃₂ max |x_i|·|x_j| / τ
    # plus the sum's (N + 2) u₃₂). The backward rounds one operand, the attention weights,
    # to bfloat16: each gradient entry within c = exp(2η + (N + 4) u₃₂)(1 + u) - 1 of its
    # terms' magnitude. A logit or a sum rounded to bfloat16 anywhere fails the first bound.
    n, d, tau = 300, 64, 0.5
    x = (torch.randn(n, d) / 8 * scale).bfloat16().float()
    weight = torch.rand(n)
    lse_ref, grad_ref, magnitude = lse_and_grad_reference(x, tau, weight, stop_gradient)
    lse, grad = bf16_lse_and_grad(x, tau, weight, stop_gradient, "bfloat16")
    largest = float((x.double().abs() @ x.double().abs().T).max() / tau)
    eta = (d + 2) * U_F32 * largest
    assert float((lse - lse_ref).abs().max()) <= eta + (n + 2) * U_F32
    exact = math.exp(2 * eta + (n + 4) * U_F32) - 1  # the bound of float32 products
    c = (1 + exact) * (1 + U_BF16) - 1
    assert bool(((grad - grad_ref).abs() <= c * magnitude).all())


@pytest.mark.skipif(not BF16_GEMM, reason="this CPU has no oneDNN bf16 GEMM")
@pytest.mark.parametrize("stop_gradient", [False, True])
@pytest.mark.parametrize("scale", [1.0, 8.0])
def test_bfloat16_products_of_exact_rows_differ_from_float32_ones(stop_gradient, scale):
    # The rows of the test above: float32 products keep the gradient within 2·(the float32
    # bound) of these; the attention weights rounded to bfloat16 take it beyond. Where the
    # CPU has no bf16 GEMM the setting is checked by a spy instead (the next test)
    n, d, tau = 300, 64, 0.5
    x = (torch.randn(n, d) / 8 * scale).bfloat16().float()
    weight = torch.rand(n)
    _, _, magnitude = lse_and_grad_reference(x, tau, weight, stop_gradient)
    _, grad = bf16_lse_and_grad(x, tau, weight, stop_gradient, "bfloat16")
    _, grad32 = bf16_lse_and_grad(x, tau, weight, stop_gradient, None)
    largest = float((x.double().abs() @ x.double().abs().T).max() / tau)
    exact = math.exp(2 * (d + 2) * U_F32 * largest + (n + 4) * U_F32) - 1
    assert float(((grad - grad32).abs() / magnitude).max()) > 2 * exact


@pytest.fixture
def product_precisions(monkeypatch) -> list[tuple[str, torch.dtype, str]]:
    """Every product the tiles take (``torch.mm``, ``Tensor.addmm_``), as (which, its
    operand's dtype, oneDNN's float32 precision in force when it ran): the setting that makes
    a float32 GEMM a bf16 one, read on any CPU, with bf16 units or not."""
    seen = []
    matmul = torch.backends.mkldnn.matmul
    mm, addmm_ = torch.mm, torch.Tensor.addmm_

    def spy_mm(a, b, *args, **kwargs):
        seen.append(("mm", a.dtype, matmul.fp32_precision))
        return mm(a, b, *args, **kwargs)

    def spy_addmm_(out, a, b, *args, **kwargs):
        seen.append(("addmm_", a.dtype, matmul.fp32_precision))
        return addmm_(out, a, b, *args, **kwargs)

    monkeypatch.setattr(torch, "mm", spy_mm)
    monkeypatch.setattr(torch.Tensor, "addmm_", spy_addmm_)
    return seen


@pytest.mark.parametrize("stop_gradient", [False, True])
@pytest.mark.parametrize("scale", [1.0, 8.0])  # the bounded and the online (unshifted) tiles
def test_bfloat16_products_run_under_onednns_bf16_setting_forward_and_backward(
    product_precisions, stop_gradient, scale
):
    before = torch.backends.mkldnn.matmul.fp32_precision
    assert before != "bf16"
    x = (scale * F.normalize(torch.randn(200, 16), dim=1)).requires_grad_(True)
    for matmul_dtype, precision in (("bfloat16", "bf16"), (None, before)):
        lse = tiled_row_logsumexp(x, 0.5, stop_gradient, tile_size=64, matmul_dtype=matmul_dtype)
        forward = list(product_precisions)
        product_precisions.clear()
        lse.sum().backward()
        backward = list(product_precisions)
        product_precisions.clear()
        assert forward and backward, "the spy saw no product"
        assert {p for _, dtype, p in forward + backward if dtype == F32} == {precision}
    # float64 rows keep their products: the option leaves oneDNN's setting alone
    tiled_row_logsumexp(x.double(), 0.5, tile_size=64, matmul_dtype="bfloat16").sum().backward()
    assert {p for _, _, p in product_precisions} == {before}


def test_bfloat16_products_leave_the_global_setting_as_they_found_it():
    before = torch.backends.mkldnn.matmul.fp32_precision
    x = torch.randn(200, 32, requires_grad=True)
    tiled_row_logsumexp(x, 0.5, tile_size=64, matmul_dtype="bfloat16").sum().backward()
    assert torch.backends.mkldnn.matmul.fp32_precision == before


def test_bfloat16_products_on_the_torch_tiles_or_triton_alone():
    with pytest.raises(ValueError, match="matmul_dtype"):
        UniformAttention(implementation="dense", matmul_dtype="bfloat16")
    with pytest.raises(ValueError, match="matmul_dtype"):
        InfoNCELoss(implementation="dense", matmul_dtype="bfloat16")
    with pytest.raises(ValueError, match="matmul_dtype"):
        info_nce(torch.randn(4, 3), torch.randn(4, 3), distributed="ring", matmul_dtype="bfloat16")
    with pytest.raises(ValueError, match="matmul_dtype"):  # not oneDNN's: refused before a GEMM
        tiled_row_logsumexp(torch.empty(8, 4, device="meta"), 0.5, matmul_dtype="bfloat16")
    with pytest.raises(ValueError, match="matmul_dtype"):
        tiled_row_logsumexp(torch.randn(8, 4), 0.5, matmul_dtype="float16")
