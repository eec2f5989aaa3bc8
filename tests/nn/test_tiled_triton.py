"""The fused Triton log-partition equals the float64 brute-force energy and gradient, in
every precision its products take (IEEE, TF32, bfloat16 operands with float32
accumulation), with and without the keys split among programs, within the error bound each
precision is documented to meet (:mod:`cl2gnn.nn._triton_plan`).

Triton picks its interpreter when a kernel is defined, so the kernels run in a child
process started with ``TRITON_INTERPRET=1`` (on the CPU). The interpreter multiplies with
numpy whatever the precision asked (and bfloat16 bit patterns as integers), so the child
replaces its product by what the tensor cores compute: bfloat16 operands exactly in
float32, TF32 operands with their 13 low bits dropped (the truncating conversion the bound
allows), float32 accumulation. A multiprocessor count is given to the split rule (the CPU
has none) so that small inputs are split.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from cl2gnn.nn import UniformAttention
from cl2gnn.nn import _triton_plan as plan

pytest.importorskip("triton")

# (n, d, stop_gradient, self_loops, dtype, scale): blocks of 64 rows, ragged edges, a row
# count of 2 (one key each), d not a power of two, logits far beyond exp's range (scale 30:
# the running-max forward and the two-exponential backward; scale 1: the unshifted ones)
CASES = [
    (100, 16, False, False, "float32", 1.0),
    (70, 20, True, False, "float32", 1.0),
    (65, 33, False, True, "float32", 1.0),
    (66, 12, True, True, "float32", 1.0),
    (130, 8, False, False, "float32", 30.0),
    (130, 8, True, False, "float32", 30.0),
    (70, 8, False, True, "float32", 30.0),
    (2, 8, False, False, "float32", 1.0),
    (90, 24, False, False, "float16", 1.0),
    (90, 24, True, False, "float16", 1.0),
]

PRELUDE = """
import json, sys
import numpy as np
import torch
import triton.language as tl
from triton._C.libtriton import ir
from triton.runtime import interpreter

# Triton 3.6's interpreter turns a runtime loop bound into a Python int with int() of a
# one-element array, which numpy >= 2.4 refuses; squeeze first, as Triton 3.9's does
patch_tensor = interpreter._patch_lang_tensor
def squeezing_patch(tensor, scope):
    patch_tensor(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))
interpreter._patch_lang_tensor = squeezing_patch

def tensor_core_operand(handle, precision):
    # what the tensor cores multiply: bfloat16 (stored as uint16) and float16 exactly in
    # float32, float32 as it is (IEEE) or with its 13 low bits dropped (TF32)
    data = handle.data
    if handle.dtype == tl.bfloat16:
        return (data.astype(np.uint32) << 16).view(np.float32)
    data = data.astype(np.float32)
    if precision == ir.INPUT_PRECISION.TF32 and handle.dtype == tl.float32:
        data = (data.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return data

def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
    product = np.matmul(
        tensor_core_operand(a, input_precision), tensor_core_operand(b, input_precision)
    )
    return interpreter.TensorHandle(product + d.data, d.dtype.scalar)
interpreter.InterpreterBuilder.create_dot = create_dot
"""

WORKER = (
    PRELUDE
    + """

import torch.nn.functional as F
from cl2gnn.losses import InfoNCELoss
from cl2gnn.nn import UniformAttention
from tests import reference as ref

torch.manual_seed(0)
errors = []
for n, d, stop, loops, dtype, scale in json.loads(sys.argv[1]):
    x64 = F.normalize(torch.randn(n, d, dtype=torch.float64), dim=1) * scale
    w = torch.rand(n, dtype=torch.float64)
    op = UniformAttention(
        temperature=0.5, stop_gradient=stop, self_loops=loops, implementation="triton"
    )
    x = x64.to(getattr(torch, dtype)).requires_grad_(True)
    value = op.energy(x, weight=w.to(x.dtype))
    (grad,) = torch.autograd.grad(value.float(), x)
    xr = x.detach().double().requires_grad_(True)
    expected = ref.uniform_energy(xr, 0.5, stop, loops, weight=w.to(x.dtype).double())
    (grad_ref,) = torch.autograd.grad(expected, xr)
    scale_v = max(1.0, abs(float(expected.detach())))
    scale_g = max(1.0, float(grad_ref.abs().max()))
    errors.append([abs(float(value.detach()) - float(expected)) / scale_v,
                   float((grad.double() - grad_ref).abs().max()) / scale_g])
z1, z2 = torch.randn(40, 12), torch.randn(40, 12)
loss = InfoNCELoss(temperature=0.3, implementation="triton")(z1, z2)
errors.append([abs(float(loss.detach()) - float(ref.nt_xent(z1, z2, 0.3))), 0.0])

# "auto" where the rule names Triton (as for a large CUDA batch) runs these kernels
from cl2gnn.nn import _dispatch, uniform
launched = []
kernel = uniform.triton_row_logsumexp
uniform.triton_row_logsumexp = lambda *args: launched.append(args) or kernel(*args)
_dispatch.exact_form = lambda *args, **kwargs: "triton"
loss = InfoNCELoss(temperature=0.3)(z1, z2)
errors.append([abs(float(loss.detach()) - float(ref.nt_xent(z1, z2, 0.3))), len(launched)])
print(json.dumps(errors))
"""
)


@pytest.fixture(scope="module")
def interpreted_errors():
    return run_interpreted(WORKER, CASES)


def run_interpreted(script: str, cases: list) -> list:
    """``script`` in a child under the interpreter, ``cases`` as its argument; its last line."""
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(cases)],
        env={**os.environ, "TRITON_INTERPRET": "1"},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", range(len(CASES)), ids=[str(c) for c in CASES])
def test_triton_energy_and_gradient_equal_bruteforce(interpreted_errors, case):
    value_error, grad_error = interpreted_errors[case]
    # rounding of the logits (|S| <= scale² / τ) in the input precision bounds the error
    _, _, _, _, dtype, scale = CASES[case]
    tolerance = 8 * torch.finfo(getattr(torch, dtype)).eps * max(1.0, scale**2 / 0.5)
    assert value_error < tolerance
    assert grad_error < tolerance


def test_triton_infonce_equals_nt_xent(interpreted_errors):
    assert interpreted_errors[len(CASES)][0] < 1e-5


def test_auto_runs_the_triton_kernels_where_the_rule_names_them(interpreted_errors):
    error, launched = interpreted_errors[len(CASES) + 1]
    assert launched == 1 and error < 1e-5


def test_triton_implementation_rejects_what_it_cannot_do():
    op = UniformAttention(implementation="triton")
    x = torch.nn.functional.normalize(torch.randn(10, 4), dim=1)
    if os.environ.get("TRITON_INTERPRET") != "1":
        with pytest.raises(RuntimeError, match="CUDA"):
            op.energy(x)
    with pytest.raises(ValueError, match="exclude_index"):
        op.energy(x, exclude_index=torch.tensor([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match="supports"):
        op.energy(x.double())


# (n, d, stop_gradient, precision, scale, multiprocessors): each precision with and without
# stop-gradient; with 4 multiprocessors (and 64 keys a split) 200 rows take 3 key splits
# (the last one empty: its share is all -inf and zeros); scale 30: the unbounded kernels
PRECISION_CASES = [
    (150, 24, False, "ieee", 1.0, 0),
    (150, 24, False, "tf32", 1.0, 0),
    (150, 24, True, "tf32", 1.0, 0),
    (150, 24, False, "bf16", 1.0, 0),
    (150, 24, True, "bf16", 1.0, 0),
    (200, 16, False, "ieee", 1.0, 4),
    (200, 16, True, "ieee", 1.0, 4),
    (200, 16, False, "tf32", 1.0, 4),
    (200, 16, False, "bf16", 1.0, 4),
    (200, 8, False, "ieee", 30.0, 4),
    (200, 8, True, "ieee", 30.0, 4),
]
TAU = 0.5

PRECISION_WORKER = (
    PRELUDE
    + f"TAU = {TAU}"
    + """
import torch.nn.functional as F
from cl2gnn.nn import _triton_plan as plan
from cl2gnn.nn.tiled_triton import triton_row_logsumexp

plan.MIN_SPLIT_KEYS = 64
torch.manual_seed(0)
results = []
for n, d, stop, precision, scale, sms in json.loads(sys.argv[1]):
    plan.multiprocessors = lambda device, sms=sms: sms
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    x = (F.normalize(torch.randn(n, d, dtype=torch.float64), dim=1) * scale).float()
    w = torch.rand(n, dtype=torch.float64)
    rows = x.clone().requires_grad_(True)
    matmul_dtype = "bfloat16" if precision == "bf16" else None
    lse = triton_row_logsumexp(rows, TAU, stop, False, matmul_dtype)
    (grad,) = torch.autograd.grad((lse.double() * w).sum(), rows)
    exact = x.double().requires_grad_(True)  # the float64 brute force on the same rows
    logits = exact @ (exact.detach() if stop else exact).T / TAU
    logits = logits - torch.diag(torch.full((n,), float("inf"), dtype=torch.float64))
    lse_ref = torch.logsumexp(logits, 1)
    (grad_ref,) = torch.autograd.grad((lse_ref * w).sum(), exact)
    weights = w[:, None] * torch.softmax(logits.detach(), 1)  # w_i P_ij
    pairs = weights if stop else weights + weights.T
    mass = pairs @ x.double().norm(dim=1) / TAU  # G_i, the row's attention mass
    delta, factor, _ = plan.error_bounds(precision, d, TAU / scale**2)
    row_error = (grad.double() - grad_ref).norm(dim=1)
    rounded = x.bfloat16().double()  # bfloat16 products: those of the rounded rows, exactly
    rounded_logits = rounded @ rounded.T / TAU - torch.diag(torch.full((n,), float("inf")))
    rounded_error = (lse.double() - torch.logsumexp(rounded_logits, 1)).abs().max()
    results.append({
        "splits": plan.key_splits(n, sms),
        "lse_error": float((lse.double() - lse_ref).abs().max()),
        "lse_bound": delta + plan.SUMS_SLACK * float(lse_ref.abs().max()),
        "sums_slack": plan.SUMS_SLACK * float(lse_ref.abs().max()),
        "grad_ratio": float((row_error / ((factor + plan.SUMS_SLACK) * mass)).max()),
        "ieee_delta": plan.error_bounds("ieee", d, TAU / scale**2)[0],
        "rounded_error": float(rounded_error),
    })
print(json.dumps(results))
"""
)


@pytest.fixture(scope="module")
def precision_errors():
    return run_interpreted(PRECISION_WORKER, PRECISION_CASES)


@pytest.mark.parametrize("case", range(len(PRECISION_CASES)), ids=[str(c) for c in PRECISION_CASES])
def test_every_precision_meets_its_bound_against_float64(precision_errors, case):
    result = precision_errors[case]
    _, _, _, precision, _, sms = PRECISION_CASES[case]
    assert result["lse_error"] <= result["lse_bound"]
    assert result["grad_ratio"] <= 1.0
    if precision != "ieee":  # the reduced products ran: beyond what IEEE products allow
        assert result["lse_error"] > result["ieee_delta"]
    if precision == "bf16":  # they are the rounded rows' products, in float32
        assert result["rounded_error"] <= result["ieee_delta"] + result["sums_slack"]
    assert (result["splits"] > 1) == (sms > 0)  # the split cases are split


def test_the_precision_follows_torchs_switch_and_matmul_dtype(monkeypatch):
    x = torch.zeros(2, 2)
    assert plan.operand_precision(x) == "ieee"  # torch's default: "highest"
    monkeypatch.setattr(torch.backends.cuda.matmul, "fp32_precision", "tf32")
    assert plan.operand_precision(x) == "tf32"
    assert plan.operand_precision(x, "bfloat16") == "bf16"
    assert plan.operand_precision(x.bfloat16(), "bfloat16") == "native"  # rows' own dtype
    monkeypatch.setattr(torch.backends.cuda.matmul, "fp32_precision", "none")
    torch.set_float32_matmul_precision("high")
    try:
        assert plan.operand_precision(x) == "tf32"
    finally:
        torch.set_float32_matmul_precision("highest")
    assert plan.operand_precision(x) == "ieee"


def test_the_old_tf32_switch_reaches_the_kernels_too():
    """``allow_tf32`` (the old API) in a child: mixing the APIs in this process would make
    torch's own getter raise for the tests after it."""
    script = (
        "import torch; from cl2gnn.nn import _triton_plan as plan; "
        "torch.backends.cuda.matmul.allow_tf32 = True; "
        "print(plan.operand_precision(torch.zeros(1, 1)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip().splitlines()[-1] == "tf32", done.stderr[-2000:]


@given(rows=st.integers(1, 2_000_000), sms=st.integers(1, 200))
def test_keys_are_split_where_the_row_blocks_do_not_fill_the_device(rows, sms):
    splits = plan.key_splits(rows, sms)
    programs = -(-rows // plan.SPLIT_ROWS)
    if programs >= 2 * sms:
        assert splits == 1
        return
    assert 1 <= splits <= max(1, rows // plan.MIN_SPLIT_KEYS)  # each split keeps its keys
    if splits < rows // plan.MIN_SPLIT_KEYS:
        assert programs * splits >= 2 * sms  # not capped: twice the device filled
    assert programs * (splits - 1) < 2 * sms  # no more than that takes


def test_the_split_rule_on_an_h200():
    """132 multiprocessors: the sizes just past the dense threshold (7,328 float32 rows)."""
    assert plan.key_splits(7_328, 132) == 5  # 58 row blocks
    assert plan.key_splits(16_384, 132) == 3
    assert plan.key_splits(33_792, 132) == 1  # 264 row blocks: twice the device


def test_autotuning_is_pinned_at_large_n():
    triton = pytest.importorskip("triton")
    configs = [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=st)
        for m, n, w, st in plan.BACKWARD_CONFIGS
    ]
    small, large = {"n_bucket": 2**16}, {"n_bucket": plan.PINNED_FROM_ROWS}
    assert plan.pinned(configs, small) == configs
    assert plan.pinned(configs, large) == configs[:1]
    wide = plan.fitting_and_pinned(configs, small, BLOCK_D=256)  # 128 × 256 floats too many
    assert wide and all(c.kwargs["BLOCK_M"] * 256 <= plan.MAX_ACCUMULATOR for c in wide)
    assert plan.fitting_and_pinned(configs, large, BLOCK_D=256) == wide[:1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("stop_gradient", [False, True])
def test_triton_on_cuda_equals_float64_tiled(dtype, stop_gradient, monkeypatch):
    from cl2gnn.nn.tiled import tiled_row_logsumexp
    from cl2gnn.nn.tiled_triton import triton_row_logsumexp

    monkeypatch.setattr(torch.backends.cuda.matmul, "fp32_precision", "ieee")
    x = torch.nn.functional.normalize(torch.randn(3000, 96, device="cuda"), dim=1)
    weight = torch.rand(3000, device="cuda")
    fast = x.to(dtype).requires_grad_(True)
    exact = x.to(dtype).double().requires_grad_(True)
    value = (triton_row_logsumexp(fast, 0.2, stop_gradient).float() * weight).sum()
    (grad,) = torch.autograd.grad(value, fast)
    reference = (tiled_row_logsumexp(exact, 0.2, stop_gradient) * weight.double()).sum()
    (grad_ref,) = torch.autograd.grad(reference, exact)
    # same rounded inputs: the logits are exact up to float32 accumulation; the log-partition
    # comes back in the input dtype (rounded to half its eps, relatively: the weights are
    # positive) and the backward rounds the attention weights to it
    value_tolerance = 1e-5 if dtype == torch.float32 else torch.finfo(dtype).eps
    assert abs(float(value) - float(reference)) / float(reference) < value_tolerance
    tolerance = max(4 * torch.finfo(dtype).eps, 1e-5)
    assert float((grad.double() - grad_ref).abs().max() / grad_ref.abs().max()) < tolerance


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16"])
def test_float32_rows_on_cuda_meet_their_precisions_bound(precision, monkeypatch):
    """The hardware's products (not the interpreter's stand-in) within the documented bound."""
    from cl2gnn.nn.tiled_triton import triton_row_logsumexp

    setting = "tf32" if precision == "tf32" else "ieee"
    monkeypatch.setattr(torch.backends.cuda.matmul, "fp32_precision", setting)
    n, d = 3000, 96
    x = torch.nn.functional.normalize(torch.randn(n, d, device="cuda"), dim=1)
    weight = torch.rand(n, device="cuda", dtype=torch.float64)
    rows = x.clone().requires_grad_(True)
    lse = triton_row_logsumexp(rows, TAU, matmul_dtype="bfloat16" if precision == "bf16" else None)
    (grad,) = torch.autograd.grad((lse.double() * weight).sum(), rows)
    exact = x.double().requires_grad_(True)
    logits = exact @ exact.T / TAU - torch.diag(torch.full((n,), float("inf"), device="cuda"))
    lse_ref = torch.logsumexp(logits, 1)
    (grad_ref,) = torch.autograd.grad((lse_ref * weight).sum(), exact)
    pairs = weight[:, None] * torch.softmax(logits.detach(), 1)
    mass = (pairs + pairs.T).sum(1) / TAU  # unit rows
    delta, factor, _ = plan.error_bounds(precision, d, TAU)
    slack = plan.SUMS_SLACK * float(lse_ref.abs().max())
    assert float((lse.double() - lse_ref).abs().max()) <= delta + slack
    row_error = (grad.double() - grad_ref).norm(dim=1)
    assert float((row_error / ((factor + plan.SUMS_SLACK) * mass)).max()) <= 1.0
