"""The full-batch step's forward (two fresh views, the built-in encoder, the method's loss)
traces whole: ``torch.compile(fullgraph=True)`` fails at any graph break or data-dependent
read of the device, so a step CUDA graphs can capture is checked here on the CPU. The traced
loss and gradients equal the eager ones from the same random state (``aot_eager``: the
capture and AOT autograd, without inductor's minutes of C++ compilation).

Methods whose views or graphs have data-dependent sizes (edges coalesced per view, kNN or
clusters rebuilt, a memory bank's indices) cannot be captured by CUDA graphs at all; they
are listed with the reason and must still break, so the list stays true."""

import pytest
import torch
from torch_geometric.data import Data

from cl2gnn.node import default_config
from cl2gnn.node.methods import METHODS
from cl2gnn.node.training.fullbatch import FullBatchTrainer

NODES, FEATURES = 40, 24
DATA_DEPENDENT = {  # a step with data-dependent shapes, and its cause
    "gca": "coalesce of each view's re-weighted edges",
    "graphacl": "the views' edge count read (an empty view refused)",
    "homophily": "FAISS k-means of the embeddings",
    "kernel": "the kernel graph's edges tiled by target (counts read)",
    "knn": "the kNN graph rebuilt from the embeddings",
    "multistage": "the memory bank's indices checked",
    "polygcl": "coalesce of the symmetrised filter graph",
    "random_walk": "coalesce of the walk graph",
}


def small_graph() -> Data:
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(NODES, FEATURES, generator=generator)
    source = torch.randint(0, NODES, (120,), generator=generator)
    target = torch.randint(0, NODES, (120,), generator=generator)
    edge_index = torch.stack([torch.cat([source, target]), torch.cat([target, source])])
    return Data(x=x, edge_index=edge_index, num_nodes=NODES)


def loss_and_grads(trainer: FullBatchTrainer, forward) -> list[torch.Tensor]:
    torch.manual_seed(3)  # the same views for eager and traced
    trainer.model.zero_grad()
    loss = forward()
    loss.backward()
    grads = [p.grad.clone() for p in trainer.model.parameters() if p.grad is not None]
    return [loss.detach(), *grads]


@pytest.mark.parametrize("method", METHODS)
def test_the_full_batch_step_compiles_whole_and_equals_eager(method):
    data = small_graph()
    config = default_config(data, method).with_overrides(hidden_channels=16, out_channels=8)
    trainer = FullBatchTrainer(data, method, config, device=torch.device("cpu"))
    trainer.model.train()
    torch._dynamo.reset()
    compiled = torch.compile(trainer.loss_on_fresh_views, fullgraph=True, backend="aot_eager")
    if method in DATA_DEPENDENT:
        with pytest.raises(Exception) as broke:
            compiled()
        assert type(broke.value).__module__.startswith("torch."), broke.value
        return
    expected = loss_and_grads(trainer, trainer.loss_on_fresh_views)
    traced = loss_and_grads(trainer, compiled)
    assert len(traced) == len(expected) > 1
    for a, b in zip(traced, expected, strict=True):
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-4)  # float32 sums in another order
