"""timm-style, over every loss class of ``cl2gnn.losses`` and every argument of its
``__init__``: an option is a plain attribute read at each call. Set after construction it
gives the loss of an instance built with that value (and another loss than the default's,
or, for options that leave the value alone, it reaches the functional form); a bad value
set later fails the next call with the ``ValueError`` construction raises; ``repr`` shows
the current value."""

import copy
import inspect
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import cl2gnn.losses as losses
from cl2gnn.nn import MultiStageMemory

B, D = 8, 6
# losses whose constructor sizes learned parameters (a discriminator's width): not options
# read at each call
SHAPED = {"LocalGlobalLoss"}
LOSSES = {
    name: obj
    for name in losses.__all__
    if isinstance(obj := getattr(losses, name), type)
    and issubclass(obj, torch.nn.Module)
    and name not in SHAPED
}
OPTIONS = [
    (name, option)
    for name, cls in sorted(LOSSES.items())
    for option in list(inspect.signature(cls.__init__).parameters)[1:]
]


def memory(seed: int) -> MultiStageMemory:
    """A bank with one stored stage of ``B`` samples."""
    bank = MultiStageMemory(B, D, stages=2)
    generator = torch.Generator().manual_seed(seed)
    bank.push(torch.randn(B, D, generator=generator), torch.arange(B))
    bank.next_stage()
    return bank


@dataclass
class Case:
    value: Any  # a valid value other than the default
    bad: Any = None  # an invalid value; None: the option takes any value (flags, objects)
    base: dict = field(default_factory=dict)  # other options the option needs to matter
    same_value: bool = False  # the loss is the same: show that the option reaches the call


SIMPLE = {"mixture": "simple"}
CASES = {
    ("InfoNCELoss", "temperature"): Case(0.2, bad=0.0),
    ("InfoNCELoss", "normalize"): Case(False),
    ("InfoNCELoss", "positive_in_denominator"): Case(False),
    ("InfoNCELoss", "implementation"): Case("tiled", bad="sparse", same_value=True),
    ("InfoNCELoss", "num_keys"): Case(5, bad=0),
    ("InfoNCELoss", "distributed"): Case("gather", bad="all", same_value=True),
    # float64 rows keep their products: the option reaches the call, the value stays
    ("InfoNCELoss", "matmul_dtype"): Case("bfloat16", bad="float16", same_value=True),
    ("AttentionInfoNCELoss", "temperature"): Case(0.2, bad=-1.0),
    ("AttentionInfoNCELoss", "beta"): Case(3.0),
    ("AttentionInfoNCELoss", "normalize"): Case("positives", bad="rows"),
    ("AttentionInfoNCELoss", "distributed"): Case("ring", bad="all", same_value=True),
    ("KernelInfoNCELoss", "gamma"): Case(2.0, bad=0.0),
    ("KernelInfoNCELoss", "temperature"): Case(0.2, bad=0.0),
    ("KernelInfoNCELoss", "mixture"): Case("concat", bad="product"),
    ("KernelInfoNCELoss", "mixture_form"): Case("kernel", bad="sum", base=SIMPLE),
    ("KernelInfoNCELoss", "lam"): Case(0.3, bad=1.0, base=SIMPLE),
    ("KernelInfoNCELoss", "gamma2"): Case(1.0, bad=-1.0, base=SIMPLE),
    ("KernelInfoNCELoss", "temperature2"): Case(0.2, bad=0.0, base=SIMPLE),
    ("KernelInfoNCELoss", "distributed"): Case("gather", bad="all", same_value=True),
    ("RandomWalkLoss", "temperature"): Case(0.2, bad=0.0),
    ("RandomWalkLoss", "form"): Case("squared", bad="cubed"),
    ("RandomWalkLoss", "distributed"): Case("ring", bad="all", same_value=True),
    ("AlignmentUniformityLoss", "alpha"): Case(1.0, bad=0.0),
    ("AlignmentUniformityLoss", "t"): Case(1.0, bad=-2.0),
    ("AlignmentUniformityLoss", "lam"): Case(0.3),
    ("SpectralContrastiveLoss", "mu"): Case(2.0, bad=0.0),
    ("SpectralContrastiveLoss", "normalize"): Case(False),
    ("SpectralContrastiveLoss", "distributed"): Case("gather", bad="all", same_value=True),
    ("GeneralizedNTXentLoss", "temperature"): Case(0.2, bad=0.0),
    ("GeneralizedNTXentLoss", "psi"): Case(lambda s: s, bad="log"),
    ("GeneralizedNTXentLoss", "eta"): Case(lambda t: torch.exp(-t / 0.3), bad=1.0),
    ("GeneralizedNTXentLoss", "normalize"): Case(False),
    # the bank is part of the output: push leaves the loss alone but not the bank
    ("MultiStageAlignmentLoss", "memory"): Case(memory(1)),
    ("MultiStageAlignmentLoss", "push"): Case(False),
    ("MultiStageSimSiamLoss", "memory"): Case(memory(1)),
    ("MultiStageSimSiamLoss", "push"): Case(False),
    ("CCASSGLoss", "decorrelation"): Case(0.5, bad=-1.0),
    ("CCASSGLoss", "distributed"): Case("gather", bad="all", same_value=True),
    ("GraphACLLoss", "temperature"): Case(0.2, bad=0.0),
    ("BarlowTwinsLoss", "off_diagonal"): Case(0.5, bad=-1.0),
    ("BarlowTwinsLoss", "distributed"): Case("gather", bad="all", same_value=True),
}
MEMORY_LOSSES = {"MultiStageAlignmentLoss", "MultiStageSimSiamLoss"}


def build(name: str, **options):
    """The loss with ``options``; a memory loss gets its own bank (``memory(0)`` unless
    given), so that one instance's pushes do not reach another's."""
    options = {key: copy.deepcopy(value) for key, value in options.items()}
    if name in MEMORY_LOSSES:
        options.setdefault("memory", memory(0))
    return LOSSES[name](**options)


def evaluate(name: str, loss) -> tuple[torch.Tensor, ...]:
    """The loss on fixed inputs (and the bank after the call for a memory loss); the
    global seed is fixed for the keys drawn by ``num_keys``."""
    generator = torch.Generator().manual_seed(0)
    z1, z2, p1, p2 = (torch.randn(B, D, generator=generator, dtype=torch.float64) for _ in "1234")
    torch.manual_seed(0)
    if name == "AlignmentUniformityLoss":
        return (loss(F.normalize(z1, dim=1), F.normalize(z2, dim=1)),)
    if name == "MultiStageAlignmentLoss":
        return loss(z1.float(), z2.float(), torch.arange(B)), loss.memory.bank.clone()
    if name == "MultiStageSimSiamLoss":
        value = loss(p1.float(), p2.float(), z1.float(), z2.float(), torch.arange(B))
        return value, loss.memory.bank.clone()
    if name == "BootstrapLoss":  # predictions, then targets
        return (loss(p1, p2, z1, z2),)
    if name == "GraphACLLoss":  # each anchor's next row as its neighbor
        ring = torch.stack([(torch.arange(B) + 1) % B, torch.arange(B)])
        p, u, z = (F.normalize(v, dim=1) for v in (p1, z1, z2))
        return (loss(p, u, z, ring),)
    return (loss(z1, z2),)


def spy_functional(name: str, monkeypatch) -> list[dict]:
    """Record the options each call passes to the loss's functional form (its unchecked
    form: the module checked them where it was built, or set)."""
    cls, calls = LOSSES[name], []
    if not hasattr(cls, "functional"):
        return calls
    real = cls.functional.unchecked

    def functional(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(cls.functional, "unchecked", functional)
    return calls


def test_every_case_is_an_option_of_a_loss():
    assert LOSSES.keys() >= {"InfoNCELoss", "MultiStageSimSiamLoss"}
    assert set(CASES) == set(OPTIONS)


@pytest.mark.parametrize(("name", "option"), OPTIONS)
def test_an_option_set_after_construction_is_used(name, option, monkeypatch):
    case = CASES[name, option]  # a new option needs its case
    calls = spy_functional(name, monkeypatch)
    default = evaluate(name, build(name, **case.base))
    loss = build(name, **case.base)
    value = copy.deepcopy(case.value)
    setattr(loss, option, value)
    calls.clear()
    changed = evaluate(name, loss)
    fresh = evaluate(name, build(name, **case.base, **{option: case.value}))
    assert all(torch.equal(a, b) for a, b in zip(changed, fresh, strict=True))
    if case.same_value:  # the functional form received it (it validates it there too)
        assert calls and calls[0][option] == case.value
        assert all(torch.allclose(a, b) for a, b in zip(changed, default, strict=True))
    else:
        assert not all(torch.allclose(a, b) for a, b in zip(changed, default, strict=True))
    text = repr(loss)
    assert (repr(value) if isinstance(value, torch.nn.Module) else f"{option}={value!r}") in text


BAD = sorted(key for key, case in CASES.items() if case.bad is not None)


@pytest.mark.parametrize(("name", "option"), BAD)
def test_a_bad_option_set_later_fails_the_next_call_as_at_construction(name, option):
    case = CASES[name, option]
    with pytest.raises(ValueError, match=option) as at_construction:
        build(name, **case.base, **{option: case.bad})
    loss = build(name, **case.base)
    setattr(loss, option, case.bad)
    with pytest.raises(ValueError) as at_call:
        evaluate(name, loss)
    assert str(at_call.value) == str(at_construction.value)
