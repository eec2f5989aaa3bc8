"""The fused Triton log-partition equals the float64 brute-force energy and gradient.

Triton picks its interpreter when a kernel is defined, so the kernels run in a child
process started with ``TRITON_INTERPRET=1`` (on the CPU); bfloat16 products are not
emulated correctly by the interpreter and wait for a GPU run.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cl2gnn.nn import UniformAttention

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

WORKER = """
import json, sys
import torch
from triton.runtime import interpreter

# Triton 3.6's interpreter turns a runtime loop bound into a Python int with int() of a
# one-element array, which numpy >= 2.4 refuses; squeeze first, as Triton 3.9's does
patch_tensor = interpreter._patch_lang_tensor
def squeezing_patch(tensor, scope):
    patch_tensor(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))
interpreter._patch_lang_tensor = squeezing_patch

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


@pytest.fixture(scope="module")
def interpreted_errors():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", WORKER, json.dumps(CASES)],
        env=env,
        cwd=root,
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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("stop_gradient", [False, True])
def test_triton_on_cuda_equals_float64_tiled(dtype, stop_gradient, monkeypatch):
    from cl2gnn.nn.tiled import tiled_row_logsumexp
    from cl2gnn.nn.tiled_triton import triton_row_logsumexp

    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)  # IEEE float32
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
