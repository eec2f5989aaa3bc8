"""The objectives over several processes equal the single-process objective on the
concatenated batch, in float64: value, feature gradients and one DDP optimiser step.

One group of gloo processes per world size runs every case (``distributed_cases.py``);
the tests compare its results with the single-process computation here. Ranks hold uneven
numbers of samples (one of them a single sample), with one tile and with tiles of 3 rows.
Conventions checked: a loss returns ``P ×`` the rank's share (so the mean over ranks is the
loss and each rank's gradient on its rows is ``P ×`` the single-process one); an operator's
energy returns the share itself (the energies sum to the global energy and the gradient on
the local rows is the global one); a step returns the local rows of the global step, and
the gradient of a projection of the step is the single-process one.
"""

import pytest
import torch
import torch.multiprocessing as mp

from .._ranks import free_port
from . import distributed_cases as cases
from . import distributed_vision as vision

WORLDS = sorted(cases.SIZES)


@pytest.fixture(scope="module", params=WORLDS, ids=lambda w: f"{w}ranks")
def ranks(request, tmp_path_factory):
    """``(world, [results of rank 0, rank 1, ...])`` from one spawned process group."""
    world = request.param
    out = tmp_path_factory.mktemp(f"world{world}")
    mp.spawn(cases.worker, args=(world, free_port(), str(out)), nprocs=world, join=True)
    return world, [torch.load(out / f"rank{r}.pt") for r in range(world)]


def _close(a, b):
    return torch.allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("tiling", list(cases.TILINGS))
@pytest.mark.parametrize("mode", cases.MODES)
@pytest.mark.parametrize("name", list(cases.CASES))
def test_equals_single_process(ranks, name, mode, tiling):
    """Values and gradients; with small tiles every rank crosses several row tiles (the
    gather path's) and ring tiles, of its own rows and of every other rank's."""
    world, results = ranks
    sizes = cases.SIZES[world]
    inputs = cases.global_inputs(name, sum(sizes))
    single = cases.evaluate(name, inputs, None)
    kind = cases.CASES[name].kind
    mine = [cases.sample_slice(sizes, r) for r in range(world)]
    mine_rows = [results[r][name, mode, tiling] for r in range(world)]
    if kind == "step":  # this rank's rows of the step
        assert _close(torch.cat([m["value"] for m in mine_rows]), single["value"])
    else:  # a loss: the mean of the ranks' values; an energy: their sum
        values = torch.stack([m["value"] for m in mine_rows])
        assert _close(values.mean() if kind == "loss" else values.sum(), single["value"])
    scale = world if kind == "loss" else 1
    for key, grad in single["grads"].items():
        for r in range(world):
            assert _close(mine_rows[r]["grads"][key], scale * grad[mine[r]]), (key, r)


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


@pytest.mark.parametrize("mode", cases.MODES)
def test_ssl_step_with_global_batch_norm_equals_single_process(ranks, mode):
    """SSLNet (BN in backbone and projector) + SimCLR (in gather mode with nearest-neighbor
    positives from the gathered batch), one DDP step: every parameter and BN buffer as on
    one process."""
    world, results = ranks
    expected = vision.ddp_ssl_step(vision.step_views(), None, vision.nn_positives(mode))
    for r in range(world):
        state = results[r]["ssl step", mode]
        for key, value in expected.items():
            assert torch.allclose(state[key].to(value.dtype), value, rtol=1e-10, atol=1e-10), (
                key,
                r,
            )


def test_pretrainer_shards_every_global_batch(ranks):
    world, results = ranks
    order = torch.Generator().manual_seed(3)
    steps = vision.TRAIN_IMAGES // vision.BATCH
    expected = [
        batch
        for _ in range(vision.EPOCHS)
        for batch in torch.randperm(vision.TRAIN_IMAGES, generator=order)[
            : steps * vision.BATCH
        ].split(vision.BATCH)
    ]
    shards = [results[r]["pipeline"]["shards"] for r in range(world)]
    assert all(len(s) == len(expected) for s in shards)
    for step, batch in enumerate(expected):
        parts = [shards[r][step] for r in range(world)]
        assert all(len(p) == vision.BATCH // world for p in parts)  # equal shards
        assert torch.equal(torch.cat(parts), batch)  # disjoint, and the whole batch


def test_pretrainer_learning_rate_follows_the_global_batch(ranks):
    world, results = ranks
    for r in range(world):
        lrs = results[r]["pipeline"]["base_lrs"]
        assert lrs and all(lr == pytest.approx(0.3 * vision.BATCH / 256) for lr in lrs)


def test_knn_monitor_across_ranks_equals_unsharded_monitor(ranks):
    world, results = ranks
    for r in range(world):
        gathered, whole = results[r]["pipeline"]["features"]
        assert torch.allclose(gathered, whole, atol=1e-5)
        sharded, unsharded = results[r]["pipeline"]["monitor"]
        assert sharded == unsharded
    histories = [results[r]["pipeline"]["history"] for r in range(world)]
    assert all(h == histories[0] for h in histories)  # one global loss, one monitor


def test_resume_continues_exactly_and_rank_zero_writes(ranks):
    """Bit for bit with two processes. With three, a float sum of three ranks depends on
    its order, which follows DDP's gradient buckets, and DDP rebuilds them after its first
    iteration, which a resumed run repeats: equal to float32 rounding then."""
    world, results = ranks
    for r in range(world):
        whole, resumed = results[r]["pipeline"]["final"], results[r]["pipeline"]["resumed"]
        for key in whole:
            if world == 2:
                assert torch.equal(whole[key], resumed[key]), (key, r)
            else:
                assert torch.allclose(whole[key].double(), resumed[key].double(), atol=1e-6)
    assert results[0]["pipeline"]["files"] == ["checkpoint.pt"]


def test_more_processes_than_gpus_is_refused_before_joining(monkeypatch):
    """NCCL takes one GPU per process: rank 1 of two on a one-GPU machine gets a clear
    error instead of CUDA's "invalid device ordinal" (no group is joined)."""
    from cl2gnn.distributed import launch

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    joined = []
    monkeypatch.setattr(launch.dist, "init_process_group", lambda *a, **k: joined.append(a))
    with pytest.raises(ValueError, match="more processes on this machine than its 1 GPU"):
        launch.init_from_env("cuda")
    assert joined == []
    monkeypatch.setenv("LOCAL_RANK", "0")  # rank 0 has its GPU
    assert launch.init_from_env("cuda") == torch.device("cuda", 0) and joined == [("nccl",)]
