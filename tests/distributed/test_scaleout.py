"""Scale-out keeps its promises (issue 31): counts in half precision across ranks, datasets
read alike by every rank of a process group, the other ranks waiting for rank 0's probe beyond the
process group's timeout, and the image trainer's per-rank augmentation streams, which never
coincide (the node trainer's: tests/node/test_minibatch.py).

The multi-process tests run 2 gloo processes on the CPU."""

import os
import time
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from .._ranks import free_port

f64 = torch.float64


def _join(rank, world, port, timeout=60.0):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=timeout))


def _spawn(worker, *args, world=2):
    mp.spawn(worker, args=(world, free_port(), *args), nprocs=world, join=True)


# -- item 8: counts and sums in half precision ---------------------------------------------

# rows per rank: 301 in all (bf16 holds integers exactly only to 256), and 70,001 in all
# (fp16's largest finite value is 65,504)
HALF_SIZES = {torch.bfloat16: (150, 151), torch.float16: (35_000, 35_001)}
CHANNELS, OFFSET = 3, 100.0  # an offset that a mean summed in half precision gets wrong


def _half_inputs(dtype):
    """The global inputs, already rounded to ``dtype`` (the float64 references read the
    same rounded values)."""
    generator = torch.Generator().manual_seed(7)
    rows = sum(HALF_SIZES[dtype])
    scores = torch.randn(rows, generator=generator, dtype=f64).to(dtype)
    x = (OFFSET + 2.0 * torch.randn(rows, CHANNELS, generator=generator, dtype=f64)).to(dtype)
    weight = 1.0 + torch.rand(CHANNELS, generator=generator, dtype=f64)
    bias = torch.randn(CHANNELS, generator=generator, dtype=f64)
    cotangent = torch.randn(rows, CHANNELS, generator=generator, dtype=f64)
    return scores, x, weight, bias, cotangent


def _half_worker(rank, world, port, out):
    from cl2gnn.distributed.batchnorm import GlobalBatchNorm
    from cl2gnn.distributed.collectives import global_logsumexp

    _join(rank, world, port)
    results = {}
    try:
        for dtype, sizes in HALF_SIZES.items():
            scores, x, weight, bias, cotangent = _half_inputs(dtype)
            mine = slice(sum(sizes[:rank]), sum(sizes[: rank + 1]))
            try:
                log_sum, count = global_logsumexp(scores[mine])
                results["logsumexp", dtype] = {"log_sum": log_sum.double(), "count": count}
            except (OverflowError, RuntimeError) as error:  # each rank fails alike
                results["logsumexp", dtype] = repr(error)
            bn = GlobalBatchNorm(CHANNELS)
            with torch.no_grad():
                bn.weight.copy_(weight), bn.bias.copy_(bias)
            local = x[mine].clone().requires_grad_(True)
            y = bn(local)
            (y.double() * cotangent[mine]).sum().backward()
            results["batch norm", dtype] = {
                "y": y.detach().double(),
                "dtype": y.dtype,
                "grad": local.grad.double(),
                "running_mean": bn.running_mean.double(),
                "running_var": bn.running_var.double(),
            }
    finally:
        torch.save(results, f"{out}/rank{rank}.pt")
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def half_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("half")
    _spawn(_half_worker, str(out))
    return [torch.load(out / f"rank{r}.pt") for r in range(2)]


@pytest.mark.parametrize("dtype", list(HALF_SIZES), ids=str)
def test_global_logsumexp_counts_exactly_in_half_precision(half_ranks, dtype):
    scores = _half_inputs(dtype)[0].double()
    for result in half_ranks:
        result = result["logsumexp", dtype]
        assert isinstance(result, dict), result
        assert result["count"] == scores.numel()  # 301 / 70,001: beyond the dtype's integers
        expected = torch.logsumexp(scores, 0)
        # the sum in float32: the error is the result's own rounding to the dtype
        assert abs(float(result["log_sum"] - expected)) <= 2 * torch.finfo(dtype).eps * float(
            expected.abs()
        )


@pytest.mark.parametrize("dtype", list(HALF_SIZES), ids=str)
def test_global_batch_norm_counts_and_sums_in_float32(half_ranks, dtype):
    _, x, weight, bias, cotangent = _half_inputs(dtype)
    x = x.double().requires_grad_(True)
    running_mean, running_var = torch.zeros(CHANNELS, dtype=f64), torch.ones(CHANNELS, dtype=f64)
    y = F.batch_norm(x, running_mean, running_var, weight, bias, training=True)
    (y * cotangent).sum().backward()
    sizes = HALF_SIZES[dtype]
    tolerance = 4 * torch.finfo(dtype).eps  # the output's rounding to the dtype, |y| <~ 4
    for rank, result in enumerate(half_ranks):
        result = result["batch norm", dtype]
        mine = slice(sum(sizes[:rank]), sum(sizes[: rank + 1]))
        assert torch.allclose(result["y"], y[mine].detach(), rtol=tolerance, atol=tolerance)
        assert result["dtype"] == dtype  # the input's precision out, as torch's BatchNorm
        assert torch.allclose(result["running_mean"], running_mean, rtol=1e-6)
        assert torch.allclose(result["running_var"], running_var, rtol=1e-4)
        grad = x.grad[mine]
        scale = float(grad.abs().max())
        assert torch.allclose(result["grad"], grad, atol=tolerance * scale * 4)


# -- item 7: datasets read alike by every rank under a process group, nothing staged -------


def _cora_worker(rank, world, port, cache, data_root, out):
    import shutil

    _join(rank, world, port)
    os.environ.update(CL2GNN_CACHE=cache, CL2GNN_DATA=data_root)
    copies = []
    copytree = shutil.copytree

    def slow_copytree(*args, **kwargs):  # widens the window between the check and the copy
        copies.append(args[1])
        time.sleep(2.0)
        return copytree(*args, **kwargs)

    shutil.copytree = slow_copytree
    try:
        from cl2gnn.datasets import load_node_dataset

        dist.barrier()  # both ranks start loading together
        data = load_node_dataset("Cora")
        record = {"copies": len(copies), "x": data.x, "edge_index": data.edge_index}
        torch.save(record, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_ranks_read_a_node_dataset_in_place_alike_staging_nothing(tmp_path):
    data_root = os.environ.get("CL2GNN_DATA")
    if not data_root or not (Path(data_root) / "planetoid" / "Cora" / "raw").is_dir():
        pytest.skip("needs Cora's raw files under $CL2GNN_DATA/planetoid/Cora/raw")
    cache = tmp_path / "cache"
    _spawn(_cora_worker, str(cache), data_root, str(tmp_path))
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    # the raw files are read in place (cl2gnn/datasets/pyg_raw.py): no rank stages them (a
    # download into the cache is rank 0's alone: rank_zero_first)
    assert [r["copies"] for r in ranks] == [0, 0]
    assert torch.equal(ranks[0]["x"], ranks[1]["x"]) and ranks[0]["x"].shape == (2708, 1433)
    assert torch.equal(ranks[0]["edge_index"], ranks[1]["edge_index"])


def _image_zip(path: Path) -> None:
    from torchvision.io import encode_png

    generator = torch.Generator().manual_seed(0)
    with zipfile.ZipFile(path, "w") as zf:
        for cls in ("cat", "dog"):
            for i in range(3):
                image = torch.randint(0, 256, (3, 4, 4), generator=generator, dtype=torch.uint8)
                zf.writestr(f"train/{cls}/{i}.png", encode_png(image).numpy().tobytes())


def _folder_worker(rank, world, port, cache, root, out):
    _join(rank, world, port)
    os.environ["CL2GNN_CACHE"] = cache
    try:
        from cl2gnn.vision import data as vision_data

        decoded = []
        decode = vision_data._decode
        vision_data._decode = lambda data: decoded.append(1) or decode(data)
        dist.barrier()
        images = vision_data.load_images("folder", root, train=True)
        torch.save({"decoded": len(decoded), "images": images.images}, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_ranks_decode_an_image_folder_once_on_an_empty_cache(tmp_path):
    root = tmp_path / "images"
    root.mkdir()
    _image_zip(root / "train.zip")
    _spawn(_folder_worker, str(tmp_path / "cache"), str(root), str(tmp_path))
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert [r["decoded"] for r in ranks] == [6, 0]  # rank 0 decodes, rank 1 reads its cache
    assert torch.equal(ranks[0]["images"], ranks[1]["images"])


def _turns_worker(rank, world, port, out, local_ranks):
    from cl2gnn.distributed.launch import rank_zero_first

    os.environ["LOCAL_RANK"] = str(local_ranks[rank])
    _join(rank, world, port)
    try:

        def prepare():
            time.sleep(0.5)  # a later turn would overtake an earlier one without the waits
            with open(f"{out}/order", "a") as f:
                f.write(f"{rank}\n")
            return rank

        returned = rank_zero_first(prepare)

        def fail_on_rank_zero():
            if rank == 0:
                raise OSError("no space left on the cache's disk")
            return rank

        try:
            rank_zero_first(fail_on_rank_zero, "preparing the test data")
            error = None
        except (OSError, RuntimeError) as caught:
            error = f"{type(caught).__name__}: {caught}"
        torch.save({"returned": returned, "error": error}, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_rank_zero_first_takes_turns_and_stops_every_rank_on_an_error(tmp_path):
    # two machines: ranks 0 and 1 on the first, rank 2 first on the second (LOCAL_RANK 0)
    _spawn(_turns_worker, str(tmp_path), (0, 1, 0), world=3)
    order = (tmp_path / "order").read_text().split()
    assert order[0] == "0" and order[1] == "2" and order[2] == "1"  # rank 0, machines, rest
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(3)]
    assert [r["returned"] for r in ranks] == [0, 1, 2]
    assert ranks[0]["error"] == "OSError: no space left on the cache's disk"
    expected = "RuntimeError: preparing the test data failed on rank 0 (see its error)"
    assert [r["error"] for r in ranks[1:]] == [expected, expected]


# -- item 6: the other ranks wait for rank 0's probe beyond the group's timeout -----------

GROUP_TIMEOUT = 3.0  # the process group's own timeout in these tests (NCCL's: 10 minutes)
PROBE_SECONDS = 7.0  # rank 0's first probe takes this long


def _probe_worker(rank, world, port, out, kwargs):
    import cl2gnn.node.evaluation.experiment as node_app

    _join(rank, world, port, timeout=GROUP_TIMEOUT)
    probe = node_app.probe_score
    slept = []

    def slow_probe(*args, **kw):
        if not slept:
            slept.append(1)
            time.sleep(PROBE_SECONDS)
        return probe(*args, **kw)

    node_app.probe_score = slow_probe
    try:
        results = node_app.run_experiment(
            "digits-knn",
            "grace",
            ("grace",),
            seeds=2,
            epochs=1,
            progress=False,
            batch_size=600,
            out_channels=8,
            **kwargs,
        )
        torch.save(results, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_ranks_wait_for_a_probe_longer_than_the_groups_timeout(tmp_path):
    _spawn(_probe_worker, str(tmp_path), {})
    results = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert results[1] == [] and len(results[0]) == 1
    assert len(results[0][0]["scores"]) == 2  # both seeds probed


def test_a_probe_longer_than_the_probe_timeout_fails_clearly(tmp_path):
    with pytest.raises(Exception, match="probe-timeout"):
        _spawn(_probe_worker, str(tmp_path), {"probe_timeout": 2.0})


# -- item 9: per-rank random streams -----------------------------------------------------


def _vision_stream(monkeypatch, seed, rank, world):
    from cl2gnn.vision import train as vision_train
    from cl2gnn.vision.augment import MultiViewAugment
    from cl2gnn.vision.data import ImageSet
    from cl2gnn.vision.models import SSLNet
    from cl2gnn.vision.objectives import SimCLRObjective

    monkeypatch.setattr(vision_train, "rank_and_world", lambda: (rank, world))
    monkeypatch.setattr(vision_train, "DistributedDataParallel", lambda model, **_: model)
    images = ImageSet(torch.zeros(32, 1, 8, 8, dtype=torch.uint8), torch.zeros(32).long(), ["0"])
    augment = MultiViewAugment(size=8, mean=None, std=None)
    config = vision_train.PretrainConfig(epochs=1, batch_size=8, seed=seed)
    model = SSLNet("convnet", 1, proj_dims=(8, 4))
    trainer = vision_train.Pretrainer(model, SimCLRObjective(0.5), images, images, augment, config)
    return trainer.augment_gen.initial_seed()


def test_image_augmentation_streams_differ_for_every_seed_and_rank(monkeypatch):
    world = 4
    streams = {
        (seed, rank): _vision_stream(monkeypatch, seed, rank, world)
        for seed in range(3)
        for rank in range(world)
    }
    assert streams[0, 1] != streams[1, 0]  # seed s on rank 1 is not seed s + 1 on rank 0
    assert len(set(streams.values())) == len(streams)
