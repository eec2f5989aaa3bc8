"""The epoch profile's floor: every dense matrix product the epoch ran is replayed, by shape
and count, and nothing else."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.speed import epoch_profile


class _Products:
    """A stand-in trainer whose step runs known products."""

    def __init__(self) -> None:
        self.a, self.b = torch.randn(6, 4), torch.randn(4, 3)
        self.c = torch.zeros(6, 3)
        self.sparse = torch.eye(6).to_sparse_csr()

    def step(self) -> None:
        torch.mm(self.a, self.b)
        torch.mm(self.b.T, self.a.T)
        self.c.addmm_(self.a, self.b)
        torch.relu(self.c)  # not a product: not replayed
        torch.sparse.mm(self.sparse, self.c)  # a sparse product: not replayed as a dense one
        self.sparse @ self.c


def test_gemm_floor_replays_each_dense_product_of_the_epoch_by_shape_and_count(monkeypatch):
    replayed = []

    def replay(name, shapes, repeats=10):
        replayed.append((name, [list(s) for s in shapes if s]))
        return {"aten::mm": 1.0, "aten::addmm_": 10.0}[name]

    monkeypatch.setattr(epoch_profile, "replayed_ms", replay)
    in_epoch, floor = epoch_profile.gemm_floor(_Products(), epochs=2)
    # per epoch: two mm calls (1 ms each) and one addmm_ (10 ms), each replayed once per shape
    assert floor == 12.0
    assert sorted(replayed) == [
        ("aten::addmm_", [[6, 3], [6, 4], [4, 3]]),
        ("aten::mm", [[3, 4], [4, 6]]),
        ("aten::mm", [[6, 4], [4, 3]]),
    ]
    assert in_epoch > 0


@pytest.mark.parametrize(
    "name, shapes",
    [
        ("aten::mm", [[64, 32], [32, 16]]),
        ("aten::addmm", [[16], [64, 32], [32, 16], [], []]),
        ("aten::addmm_", [[64, 16], [64, 32], [32, 16], [], []]),
    ],
)
def test_replayed_ms_times_the_call_it_names_on_operands_of_its_shapes(name, shapes):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        assert epoch_profile.replayed_ms(name, shapes, repeats=3) > 0
    calls = [e.input_shapes for e in prof.events() if e.name == name and e.cpu_parent is None]
    assert calls == [shapes] * 4  # one warm-up and the timed repeats


@pytest.mark.parametrize("trainer_kind", ["full batch", "mini-batch"])
def test_the_floor_replaces_the_loss_by_the_projections_sum_in_the_trainers_step(trainer_kind):
    """The floor's step is the method's step with only its loss changed: the trainer's own
    call returns the sum of the two views' projections (not InfoNCE), whichever trainer."""
    from torch_geometric.data import Data

    from benchmarks._shared.floors import without_the_loss
    from cl2gnn.node import default_config
    from cl2gnn.node.training.fullbatch import FullBatchTrainer
    from cl2gnn.node.training.minibatch import MinibatchTrainer

    generator = torch.Generator().manual_seed(0)
    edges = torch.randint(0, 30, (2, 90), generator=generator)
    data = Data(
        x=torch.rand(30, 8, generator=generator), edge_index=torch.cat([edges, edges.flip(0)], 1)
    )
    config = default_config(data, "grace").with_overrides(hidden_channels=8, out_channels=8)
    if trainer_kind == "mini-batch":
        config = config.with_overrides(batch_size=10)
    trainer = (MinibatchTrainer if trainer_kind == "mini-batch" else FullBatchTrainer)(
        data, "grace", config
    )
    projected, losses = [], []
    real_project = trainer.method.project
    trainer.method.project = lambda batch: projected.append(real_project(batch)) or projected[-1]
    trainer.method.register_forward_hook(lambda module, args, out: losses.append(out.detach()))
    without_the_loss(trainer.method)
    trainer.epoch()
    assert len(losses) == len(projected) >= 1  # the trainer's step called the method
    for loss, (z1, z2, _, _) in zip(losses, projected, strict=True):
        assert torch.allclose(loss, (z1.sum() + z2.sum()).detach())
