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
