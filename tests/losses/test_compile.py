"""The exact loss has no host in it: ``torch.compile(fullgraph=True)`` traces InfoNCE whole
(dense and tiled forms, functional and module), which fails at any graph break or read of a
device value, and the compiled loss and gradients equal the float64 brute force; the eager
loss reads nothing back and makes no tensor from host data (on a GPU, a copy the step waits
for); a checked loss derives no option check at a call.

The compiled tests use the ``aot_eager`` backend: dynamo's capture and AOT autograd's
functionalisation (where in-place writes on views fail) are what ``fullgraph`` checks;
inductor's code generation adds minutes and no check of the graph."""

from functools import partial

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import cl2gnn._options as options_module
from cl2gnn._validation import without_value_checks
from cl2gnn.graphs import pair_graph
from cl2gnn.losses import InfoNCELoss, _tiling, info_nce
from cl2gnn.nn import ContrastiveConv, UniformAttention
from tests import reference as ref

f64 = torch.float64
FORMS = ("dense", "tiled")


def views(seed: int = 0, rows: int = 12, dim: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(rows, dim, generator=generator, dtype=f64, requires_grad=True) for _ in "12"
    )


def compiled(function):
    torch._dynamo.reset()
    return torch.compile(function, fullgraph=True, backend="aot_eager")


@pytest.fixture
def two_tiles(monkeypatch):
    """Tiles of 16 rows: 24 views make a diagonal block on each side of an off-diagonal one."""
    monkeypatch.setattr(_tiling, "TILE", 16)


@pytest.mark.parametrize("form", FORMS)
def test_info_nce_compiles_whole_and_equals_the_brute_force(form, two_tiles):
    z1, z2 = views()
    loss = compiled(partial(info_nce, temperature=0.4, implementation=form))
    value = loss(z1, z2)
    grads = torch.autograd.grad(value, (z1, z2))
    expected = ref.nt_xent(z1, z2, 0.4)
    expected_grads = torch.autograd.grad(expected, (z1, z2))
    assert torch.allclose(value, expected, atol=1e-12, rtol=0)
    for grad, reference in zip(grads, expected_grads, strict=True):
        assert torch.allclose(grad, reference, atol=1e-12, rtol=0)


def test_the_loss_module_compiles_whole_as_grace_calls_it(two_tiles):
    """The module, and the functional with GRACE's options (the full-batch method's call)."""
    z1, z2 = views(1)
    module = compiled(InfoNCELoss(temperature=0.3))
    functional = compiled(
        partial(info_nce, temperature=0.3, num_keys=None, matmul_dtype=None, distributed=None)
    )
    expected = ref.nt_xent(z1, z2, 0.3)
    for loss in (module, functional):
        assert torch.allclose(loss(z1, z2), expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("form", FORMS)
def test_the_eager_loss_reads_nothing_back_and_makes_nothing_on_the_host(form, two_tiles):
    """``_local_scalar_dense``: a value read back (a wait for the device); ``lift_fresh``: a
    tensor made from host data (on a GPU, a copy from the host the step waits for), as the
    dense mask's ``new_tensor(-inf)`` was. The inputs' value checks are off, as in training
    (:func:`~cl2gnn._validation.without_value_checks`)."""
    z1, z2 = (z.detach().float().requires_grad_(True) for z in views(2))
    info_nce(z1, z2, implementation=form).backward()  # warm: shared operator and pair graph
    with without_value_checks(), profile(activities=[ProfilerActivity.CPU]) as recorded:
        info_nce(z1, z2, implementation=form).backward()
    names = {event.name for event in recorded.events()}
    assert "aten::_local_scalar_dense" not in names
    assert "aten::lift_fresh" not in names
    assert "aten::mm" in names  # the profile saw the loss


def test_a_call_derives_no_option_check(monkeypatch):
    """The checks are made where a loss or operator is built (or decorated): a call works
    with ``inspect.signature`` and ``get_type_hints`` gone."""
    z1, z2 = views(3)
    module, operator = InfoNCELoss(temperature=0.3), UniformAttention(temperature=0.3)
    expected = (module(z1, z2), info_nce(z1, z2, temperature=0.3), operator.energy(z1))

    def refuse(*args, **kwargs):
        raise AssertionError("an option check derived at a call")

    monkeypatch.setattr(options_module.inspect, "signature", refuse)
    monkeypatch.setattr(options_module, "get_type_hints", refuse)
    options_module.option_checks.cache_clear()
    again = (module(z1, z2), info_nce(z1, z2, temperature=0.3), operator.energy(z1))
    assert all(torch.equal(a, b) for a, b in zip(again, expected, strict=True))


class Counting:
    """A check that counts its calls and lets every value through."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, value, name):
        self.calls += 1
        return value

    def options(self, **options) -> None:
        self.calls += 1


def test_options_are_checked_where_built_and_after_one_is_set_only(monkeypatch):
    z1, z2 = views(4)
    for temperature in (0.3, 0.5):  # the functional's shared operators, built beforehand
        info_nce(z1, z2, temperature=temperature)
    loss, conv = InfoNCELoss(temperature=0.3), ContrastiveConv(temperature=0.3)
    loss_checks, operator_check = Counting(), Counting()
    monkeypatch.setattr(InfoNCELoss, "_check_option_values", staticmethod(loss_checks.options))
    checks = tuple((name, operator_check) for name, _ in UniformAttention._option_checks)
    monkeypatch.setattr(UniformAttention, "_option_checks", checks)
    x, pairs = torch.cat([z1, z2]).detach(), pair_graph(12)
    for _ in range(3):
        loss(z1, z2)
        conv.energy(x, pairs)
    # built and checked: a call reads one flag
    assert loss_checks.calls == operator_check.calls == 0
    loss.temperature, conv.temperature = 0.5, 0.5
    for _ in range(3):
        loss(z1, z2)
        conv.energy(x, pairs)
    # once, at the first call after the set: every option of the loss, each of the operator
    assert loss_checks.calls == 1 and operator_check.calls == len(checks) > 0


def test_a_bad_option_set_later_shows_in_the_repr_and_fails_the_call():
    loss = InfoNCELoss()
    loss.temperature = -1.0
    assert "temperature=-1.0" in repr(loss)  # the repr reads, it does not check
    with pytest.raises(ValueError, match="temperature"):
        loss(*views(5))
