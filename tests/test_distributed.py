"""The objectives over several processes equal the single-process objective on the
concatenated batch, in float64: value, feature gradients and one DDP optimiser step.

One group of gloo processes per world size runs every case (``distributed_cases.py``);
the tests compare its results with the single-process computation here. Ranks hold uneven
numbers of samples (one of them a single sample). Conventions checked: a loss returns
``P ×`` the rank's share (so the mean over ranks is the loss and each rank's gradient on its
rows is ``P ×`` the single-process one); an operator's energy returns the share itself
(the energies sum to the global energy and the gradient on the local rows is the global
one); a step returns the local rows of the global step.
"""

import socket

import pytest
import torch
import torch.multiprocessing as mp

from . import distributed_cases as cases

WORLDS = sorted(cases.SIZES)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module", params=WORLDS, ids=lambda w: f"{w}ranks")
def ranks(request, tmp_path_factory):
    """``(world, [results of rank 0, rank 1, ...])`` from one spawned process group."""
    world = request.param
    out = tmp_path_factory.mktemp(f"world{world}")
    mp.spawn(cases.worker, args=(world, _free_port(), str(out)), nprocs=world, join=True)
    return world, [torch.load(out / f"rank{r}.pt") for r in range(world)]


def _close(a, b):
    return torch.allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mode", cases.MODES)
@pytest.mark.parametrize("name", list(cases.CASES))
def test_equals_single_process(ranks, name, mode):
    world, results = ranks
    sizes = cases.SIZES[world]
    inputs = cases.global_inputs(name, sum(sizes))
    single = cases.evaluate(name, inputs, None)
    kind = cases.CASES[name].kind
    mine = [cases.sample_slice(sizes, r) for r in range(world)]
    if kind == "step":
        out = torch.cat([results[r][name, mode]["value"] for r in range(world)])
        assert _close(out, single["value"])
        return
    values = torch.stack([results[r][name, mode]["value"] for r in range(world)])
    # a loss: the mean of the ranks' values; an energy: their sum
    assert _close(values.mean() if kind == "loss" else values.sum(), single["value"])
    scale = world if kind == "loss" else 1
    for key, grad in single["grads"].items():
        for r in range(world):
            assert _close(results[r][name, mode]["grads"][key], scale * grad[mine[r]]), (key, r)


@pytest.mark.parametrize("mode", cases.MODES)
@pytest.mark.parametrize("loss", list(cases.DDP_LOSSES))
def test_ddp_step_equals_single_process_step(ranks, loss, mode):
    world, results = ranks
    inputs = cases.global_inputs("InfoNCELoss", sum(cases.SIZES[world]))
    expected = cases.ddp_step(inputs, None, loss)
    for r in range(world):
        assert _close(results[r]["ddp", loss, mode], expected), r


@pytest.mark.parametrize("mode", cases.MODES)
@pytest.mark.parametrize(
    ("bad", "message"), [("rank without rows", "rank 0 has no rows"), ("unequal widths", "width")]
)
def test_inputs_wrong_across_ranks_raise_on_every_rank(ranks, bad, mode, message):
    world, results = ranks
    errors = [results[r]["errors"][bad, mode] for r in range(world)]
    assert all(error is not None and message in error for error in errors), errors


@pytest.mark.parametrize("mode", cases.MODES)
@pytest.mark.parametrize("name", [n for n, c in cases.CASES.items() if c.kind != "step"])
def test_without_a_process_group_a_mode_changes_nothing(name, mode):
    inputs = cases.global_inputs(name, 6)
    plain, moded = cases.evaluate(name, inputs, None), cases.evaluate(name, inputs, mode)
    assert torch.equal(plain["value"], moded["value"])
    assert all(torch.equal(plain["grads"][k], moded["grads"][k]) for k in plain["grads"])
