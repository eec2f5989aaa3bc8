"""The call path a reader follows from the training step to the logits: the library's frames
(``cl2gnn/``), recorded by ``sys.setprofile``, from :meth:`FullBatchTrainer.step` down to
the frame that issues the anchors-by-keys product (seen by a dispatch mode as the first
``mm`` whose output is wider than any layer of the small encoder). torch's own frames
(``Module.__call__``) are not the library's and are not counted."""

import sys
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch_geometric.data import Data

import cl2gnn
from cl2gnn.node import default_config
from cl2gnn.node.training.fullbatch import FullBatchTrainer

LIBRARY = str(Path(cl2gnn.__file__).parent)
WIDTH = 16  # the encoder's widest layer: a product wider than this is the logits
MAX_FRAMES = 8  # from the step to the logits, in the dense form and in the CPU's tiles


def graph(nodes: int) -> Data:
    generator = torch.Generator().manual_seed(0)
    source = torch.randint(0, nodes, (3 * nodes,), generator=generator)
    target = torch.randint(0, nodes, (3 * nodes,), generator=generator)
    edge_index = torch.stack([torch.cat([source, target]), torch.cat([target, source])])
    return Data(x=torch.rand(nodes, 24, generator=generator), edge_index=edge_index)


def frames_to_the_logits(trainer: FullBatchTrainer) -> list[str]:
    stack: list[str] = []
    found: list[list[str]] = []

    class FirstWideProduct(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            product = func.overloadpacket.__name__ in ("mm", "addmm")
            if not found and product and min(out.shape) > 4 * WIDTH:
                found.append(list(stack))
            return out

    def record(frame, event, arg) -> None:
        if event == "call":
            stack.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(record)
    try:
        with FirstWideProduct():
            trainer.step()
    finally:
        sys.setprofile(None)
    assert found, "no anchors-by-keys product was issued"
    path = found[0]
    start = max(i for i, frame in enumerate(path) if frame.endswith("fullbatch.py:step"))
    return [frame for frame in path[start:] if frame.startswith(LIBRARY)]


@pytest.mark.parametrize(("form", "nodes"), [("dense", 200), ("tiled", 300)])
def test_the_step_reaches_the_logits_within_the_frames_a_reader_can_follow(form, nodes):
    data = graph(nodes)
    config = default_config(data, "grace").with_overrides(
        hidden_channels=WIDTH, out_channels=WIDTH, proj_hidden=WIDTH, num_keys=None
    )
    trainer = FullBatchTrainer(data, "grace", config, device=torch.device("cpu"))
    frames = frames_to_the_logits(trainer)
    names = [frame.rsplit("/", 1)[-1] for frame in frames]
    assert any("tiled.py" in name for name in names) == (form == "tiled"), names
    assert len(frames) <= MAX_FRAMES, names
