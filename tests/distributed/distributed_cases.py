"""The objectives that span ranks, each as a case run both on several gloo processes (by
``tests/distributed/test_distributed.py``'s workers) and on one process over the concatenated batch.

Every input's first dimension is the natural sample; rank ``r`` holds the samples
``SIZES[world][r]`` after those of the ranks before it, so the positives (the views of a
sample, or edges among them) are local, as the distributed objectives require.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F

from cl2gnn.graphs import pair_graph
from cl2gnn.losses import (
    AttentionInfoNCELoss,
    InfoNCELoss,
    KernelInfoNCELoss,
    RandomWalkLoss,
    SpectralContrastiveLoss,
    _tiling,
)
from cl2gnn.nn import AttentionAlignConv, ContrastiveConv, UniformAttention

from . import distributed_vision as vision

f64 = torch.float64
SIZES = {2: (5, 3), 3: (4, 1, 3)}  # samples per rank: uneven, one rank with a single sample
MODES = ("gather", "ring")
DIM = 4
# tiles (the losses' _tiling.TILE, read by the operator cases too): one tile for everything, or
# 3 rows, so that every rank crosses several row and ring tiles, the last one partial
TILINGS = {"one tile": 1024, "small tiles": 3}


def tile() -> int:
    """The tile of this call: the losses' (module-level) ``_tiling.TILE``."""
    return _tiling.TILE


@contextmanager
def tiles(size: int) -> Iterator[None]:
    """Every loss's (and case's) tile ``size`` within the block."""
    before = _tiling.TILE
    _tiling.TILE = size
    try:
        yield
    finally:
        _tiling.TILE = before


@dataclass(frozen=True)
class Case:
    """``kind``: ``"loss"`` (each rank returns ``P ×`` its share), ``"energy"`` (an
    operator's share), ``"step"`` (an operator's forward: this rank's rows of the step,
    differentiated through the fixed projection ``probe``).
    ``inputs(generator, samples)`` builds the global inputs; ``run(inputs, distributed)``
    evaluates the objective on (a rank's slice of) them."""

    kind: str
    inputs: Callable[[torch.Generator, int], dict]
    run: Callable[[dict, str | None], torch.Tensor]


def _views(generator, samples, views=2, dim=DIM):
    return {"z": torch.randn(samples, views, dim, generator=generator, dtype=f64)}


def _views_and_h(generator, samples):
    h = torch.randn(samples, 2, 3, generator=generator, dtype=f64)
    return {**_views(generator, samples), "h": h}


def _views_and_graph(generator, samples):
    """Three views per sample and a random weighted graph among each sample's views."""
    weight = torch.rand(samples, 3, 3, generator=generator, dtype=f64)
    keep = torch.rand(samples, 3, 3, generator=generator) < 0.6
    keep[:, 0, 1] = True  # every sample has a positive pair
    return {**_views(generator, samples, 3), "w": weight * keep}


def _probed(make):
    """``make``'s inputs and a fixed projection ``probe`` of a step's output rows."""

    def inputs(generator, samples):
        made = make(generator, samples)
        views = made["z"].size(1)
        probe = torch.randn(samples, views, DIM, generator=generator, dtype=f64)
        return {**made, "probe": probe}

    return inputs


def _rows(z):
    return z.reshape(-1, z.size(-1))


def _sample_id(z):
    return torch.arange(z.size(0)).repeat_interleave(z.size(1))


def _local_graph(w):
    """The edges ``(v -> u)`` of each sample's ``w[s, u, v] > 0``, in stacked-row indices."""
    sample, target, source = torch.nonzero(w, as_tuple=True)
    views = w.size(1)
    edge_index = torch.stack([sample * views + source, sample * views + target])
    return edge_index, w[sample, target, source]


def _two(loss):
    return lambda t, d: loss(d)(t["z"][:, 0], t["z"][:, 1])


CASES = {
    "InfoNCELoss": Case("loss", _views, _two(lambda d: InfoNCELoss(0.5, distributed=d))),
    "InfoNCELoss-decoupled": Case(
        "loss",
        _views,
        _two(lambda d: InfoNCELoss(0.3, positive_in_denominator=False, distributed=d)),
    ),
    "InfoNCELoss-sample_id": Case(
        "loss",
        lambda g, s: _views(g, s, 3),
        lambda t, d: InfoNCELoss(0.5, distributed=d)(_rows(t["z"]), sample_id=_sample_id(t["z"])),
    ),
    "InfoNCELoss-edge_index": Case(
        "loss",
        _views_and_graph,
        lambda t, d: InfoNCELoss(0.5, distributed=d)(
            _rows(t["z"]), edge_index=_local_graph(t["w"])[0], edge_weight=_local_graph(t["w"])[1]
        ),
    ),
    "AttentionInfoNCELoss-negatives": Case(
        "loss",
        _views_and_h,
        lambda t, d: AttentionInfoNCELoss(0.5, beta=1.5, distributed=d)(
            t["z"][:, 0], t["z"][:, 1], h1=t["h"][:, 0], h2=t["h"][:, 1]
        ),
    ),
    "AttentionInfoNCELoss-positives": Case(
        "loss",
        _views_and_h,
        lambda t, d: AttentionInfoNCELoss(0.5, beta=2.0, normalize="positives", distributed=d)(
            t["z"][:, 0], t["z"][:, 1], h1=t["h"][:, 0], h2=t["h"][:, 1]
        ),
    ),
    "KernelInfoNCELoss-laplacian": Case(
        "loss", _views, _two(lambda d: KernelInfoNCELoss(gamma=1.0, distributed=d))
    ),
    "KernelInfoNCELoss-concat-kernel": Case(
        "loss",
        _views,
        _two(
            lambda d: KernelInfoNCELoss(
                mixture="concat", mixture_form="kernel", temperature2=0.3, distributed=d
            )
        ),
    ),
    "KernelInfoNCELoss-simple-loss": Case(
        "loss",
        lambda g, s: _views(g, s, 3),
        lambda t, d: KernelInfoNCELoss(gamma=0.5, mixture="simple", distributed=d)(
            _rows(t["z"]), sample_id=_sample_id(t["z"])
        ),
    ),
    "SpectralContrastiveLoss": Case(
        "loss", _views, _two(lambda d: SpectralContrastiveLoss(mu=2.0, distributed=d))
    ),
    "SpectralContrastiveLoss-graph": Case(
        "loss",
        _views_and_graph,
        lambda t, d: SpectralContrastiveLoss(distributed=d)(
            _rows(t["z"]), edge_index=_local_graph(t["w"])[0], edge_weight=_local_graph(t["w"])[1]
        ),
    ),
    "RandomWalkLoss-paper": Case("loss", _views, _two(lambda d: RandomWalkLoss(distributed=d))),
    "RandomWalkLoss-squared": Case(
        "loss", _views, _two(lambda d: RandomWalkLoss(0.4, form="squared", distributed=d))
    ),
    "UniformAttention": Case(
        "energy",
        _views,
        lambda t, d: UniformAttention(temperature=0.5, tile_size=tile(), distributed=d).energy(
            _rows(t["z"])
        ),
    ),
    "UniformAttention-stop_gradient-weight": Case(
        "energy",
        lambda g, s: {**_views(g, s), "w": torch.rand(s, 2, generator=g, dtype=f64)},
        lambda t, d: UniformAttention(
            temperature=0.7, stop_gradient=True, tile_size=tile(), distributed=d
        ).energy(_rows(t["z"]), weight=t["w"].reshape(-1)),
    ),
    "UniformAttention-self_loops": Case(
        "energy",
        lambda g, s: _views(g, s, 1),
        lambda t, d: UniformAttention(
            temperature=0.5, self_loops=True, tile_size=tile(), distributed=d
        ).energy(_rows(t["z"])),
    ),
    "UniformAttention-exclude_index": Case(
        "energy",
        lambda g, s: _views(g, s, 3),
        lambda t, d: UniformAttention(temperature=0.5, tile_size=tile(), distributed=d).energy(
            _rows(t["z"]), exclude_index=pair_graph(sample_id=_sample_id(t["z"]))
        ),
    ),
    "ContrastiveConv": Case(
        "energy",
        _views,
        lambda t, d: ContrastiveConv(temperature=0.5, tile_size=tile(), distributed=d).energy(
            F.normalize(_rows(t["z"]), dim=1), pair_graph(sample_id=_sample_id(t["z"]))
        ),
    ),
    "UniformAttention-forward": Case(
        "step",
        _probed(_views),
        lambda t, d: UniformAttention(step=0.3, temperature=0.5, tile_size=tile(), distributed=d)(
            _rows(t["z"])
        ),
    ),
    "UniformAttention-forward-stop_gradient": Case(
        "step",
        _probed(_views),
        lambda t, d: UniformAttention(
            step=0.3, temperature=0.5, stop_gradient=True, tile_size=tile(), distributed=d
        )(_rows(t["z"])),
    ),
    "UniformAttention-forward-self_loops-weight": Case(
        "step",
        _probed(lambda g, s: {**_views(g, s), "w": torch.rand(s, 2, generator=g, dtype=f64)}),
        lambda t, d: UniformAttention(
            step=0.2, temperature=0.7, self_loops=True, tile_size=tile(), distributed=d
        )(_rows(t["z"]), weight=t["w"].reshape(-1)),
    ),
    "UniformAttention-forward-exclude_index": Case(
        "step",
        _probed(lambda g, s: _views(g, s, 3)),
        lambda t, d: UniformAttention(step=0.3, temperature=0.5, tile_size=tile(), distributed=d)(
            _rows(t["z"]), exclude_index=pair_graph(sample_id=_sample_id(t["z"]))
        ),
    ),
    "ContrastiveConv-forward": Case(
        "step",
        _probed(_views),
        lambda t, d: ContrastiveConv(step=0.3, temperature=0.5, tile_size=tile(), distributed=d)(
            F.normalize(_rows(t["z"]), dim=1), pair_graph(sample_id=_sample_id(t["z"]))
        ),
    ),
    "ContrastiveConv-forward-decoupled-stop_gradient": Case(
        "step",
        _probed(lambda g, s: _views(g, s, 3)),
        lambda t, d: ContrastiveConv(
            step=0.3,
            temperature=0.4,
            positive_in_denominator=False,
            stop_gradient=True,
            tile_size=tile(),
            distributed=d,
        )(_rows(t["z"]), pair_graph(sample_id=_sample_id(t["z"]))),
    ),
    "AttentionAlignConv-forward": Case(
        "step",
        _probed(_views_and_h),
        lambda t, d: AttentionAlignConv(step=0.3, beta=1.5, tile_size=tile(), distributed=d)(
            _rows(t["z"]), pair_graph(sample_id=_sample_id(t["z"])), h=_rows(t["h"])
        ),
    ),
    "AttentionAlignConv-forward-positives-stop_gradient": Case(
        "step",
        _probed(_views_and_graph),
        lambda t, d: AttentionAlignConv(
            step=0.4, beta=2.0, normalize="positives", stop_gradient=True, distributed=d
        )(_rows(t["z"]), *_local_graph(t["w"])),
    ),
}


def global_inputs(name: str, samples: int) -> dict:
    generator = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    return CASES[name].inputs(generator, samples)


def sample_slice(sizes: tuple[int, ...], rank: int) -> slice:
    start = sum(sizes[:rank])
    return slice(start, start + sizes[rank])


def evaluate(name: str, inputs: dict, distributed: str | None) -> dict:
    """The objective's value and the gradients of its float inputs (a step: its output, and
    the gradients of the output's projection on ``probe``)."""
    probe = inputs.get("probe")
    inputs = {
        k: v.clone().requires_grad_(v.is_floating_point())
        for k, v in inputs.items()
        if k != "probe"
    }
    value = CASES[name].run(inputs, distributed)
    scalar = value if probe is None else (value * _rows(probe)).sum()
    floats = [k for k, v in inputs.items() if v.requires_grad]
    grads = torch.autograd.grad(scalar, [inputs[k] for k in floats], allow_unused=True)
    grads = {
        k: torch.zeros_like(inputs[k]) if g is None else g
        for k, g in zip(floats, grads, strict=True)
    }
    return {"value": value.detach(), "grads": grads}


def ddp_step(inputs: dict, distributed: str | None, loss_name: str) -> torch.Tensor:
    """One SGD step of a small model under DDP (or alone): its parameters afterwards."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(DIM, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).to(
        f64
    )
    if distributed is not None:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    z = inputs["z"]
    loss = DDP_LOSSES[loss_name](distributed)(model(z[:, 0]), model(z[:, 1]))
    loss.backward()
    optimizer.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


DDP_LOSSES = {
    "InfoNCELoss": lambda d: InfoNCELoss(0.5, distributed=d),
    "SpectralContrastiveLoss": lambda d: SpectralContrastiveLoss(distributed=d),
}


BAD_INPUTS = {
    "rank without rows": lambda rank: torch.randn(0 if rank == 0 else 3, DIM, dtype=f64),
    "unequal widths": lambda rank: torch.randn(3, DIM + rank, dtype=f64),
}


def bad_input_errors(rank: int) -> dict:
    """The message each rank raises for inputs that are wrong across ranks (or ``None``
    where it raised nothing): every rank must raise, none may wait for the others."""
    errors = {}
    for name, make in BAD_INPUTS.items():
        for mode in MODES:
            z = make(rank)
            try:
                InfoNCELoss(distributed=mode)(z, z.clone())
                errors[name, mode] = None
            except ValueError as error:
                errors[name, mode] = str(error)
    return errors


def worker(rank: int, world: int, port: int, out_dir: str) -> None:
    """Every case in both modes and both tilings on this rank; one file of results per
    rank."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    torch.set_num_threads(1)
    sizes = SIZES[world]
    mine = sample_slice(sizes, rank)
    results = {}
    for tiling, size in TILINGS.items():
        with tiles(size):
            for name in CASES:
                local = {k: v[mine] for k, v in global_inputs(name, sum(sizes)).items()}
                for mode in MODES:
                    results[name, mode, tiling] = evaluate(name, local, mode)
    for name in DDP_LOSSES:
        local = {k: v[mine] for k, v in global_inputs("InfoNCELoss", sum(sizes)).items()}
        for mode in MODES:
            results["ddp", name, mode] = ddp_step(local, mode, name)
    results["errors"] = bad_input_errors(rank)
    views = vision.step_views()
    for mode in MODES:
        step_rows = sample_slice(vision.STEP_SIZES[world], rank)
        results["ssl step", mode] = vision.ddp_ssl_step(
            views[step_rows], mode, vision.nn_positives(mode)
        )
    results["pipeline"] = vision.pipeline_records(rank, out_dir)
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()
