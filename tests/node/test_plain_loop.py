"""A method held as a PyG module and trained in a plain loop (issue 63): the README's loops
run, and the loop ``train_node_model`` runs adds nothing a user could not write: the same
seed gives the same losses and embeddings, in float64."""

import copy
import re
from pathlib import Path

import pytest
import torch
from torch_geometric import seed_everything
from torch_geometric.data import Data
from torch_geometric.nn.models import GCN

from cl2gnn.graphs import neighbor_loader
from cl2gnn.node import BGRL, GRACE, GraphEncoder, NodeConfig, train_node_model

README = Path(__file__).resolve().parents[2] / "README.md"
EPOCHS = 4


def graph(dtype=torch.float32, num_nodes=50, seed=0) -> Data:
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(num_nodes, 10, generator=generator, dtype=dtype)
    edges = torch.randint(0, num_nodes, (2, 3 * num_nodes), generator=generator)
    return Data(x=x, edge_index=torch.cat([edges, edges.flip(0)], 1))


def readme_loop(name: str) -> str:
    """The README's code block after ``<!-- plain-loop: name -->``."""
    text = README.read_text()
    match = re.search(rf"<!-- plain-loop: {name} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"README has no plain loop for {name}"
    return match.group(1)


@pytest.mark.parametrize("name", ["grace", "bgrl"])
def test_the_readmes_plain_loop_trains_and_embeds(name):
    code = readme_loop(name)
    assert len(code.strip().splitlines()) <= 15  # the bound: at most 15 lines each
    code = re.sub(r"range\((200|300)\)", f"range({EPOCHS})", code).replace("= 300", "= 4")
    data = graph()
    namespace = {"data": data}
    exec(compile(code, f"README ({name})", "exec"), namespace)
    method, embeddings = namespace["method"], namespace["embeddings"]
    assert embeddings.shape == (data.num_nodes, method.dim)
    # trained: the encoder moved from where a fresh copy of the same seed starts
    assert isinstance(method, GRACE if name == "grace" else BGRL)
    assert torch.isfinite(embeddings).all()
    if name == "bgrl":  # the target followed the online encoder after each step
        online = dict(method.encoder.named_parameters())
        target = dict(method.target.encoder.named_parameters())
        assert all(not torch.equal(online[k], target[k]) for k in online)


def plain_loop(method, data, config, epochs=EPOCHS):
    """The user's loop: Adam on every parameter, a step per epoch, the after-step hook."""
    optimizer = torch.optim.Adam(
        method.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    losses = []
    for epoch in range(epochs):
        optimizer.zero_grad()
        loss = method(data)
        loss.backward()
        optimizer.step()
        method.after_step((epoch + 1) / epochs)
        losses.append(float(loss))
    return losses, method.embed(data.x, data.edge_index)


@pytest.fixture
def float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


CASES = {
    "grace": (GRACE, {"temperature": 0.5, "proj_hidden": 16}),
    "bgrl": (BGRL, {"predictor_hidden": 16, "ema_cosine": True}),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("encoder", ["pyg", "builtin"])
def test_a_plain_loop_equals_train_node_model_for_the_same_seed(name, encoder, float64):
    """The same seed, the same configuration: the plain loop over the method module and
    ``train_node_model`` give the same losses and embeddings (the built-in encoder's
    column masks act on its weight in the library's loop and on the features in the plain
    one: equal to float64 rounding)."""
    cls, options = CASES[name]
    data = graph(torch.float64)
    config = NodeConfig(epochs=EPOCHS, options=options)
    if encoder == "pyg":
        model = GCN(10, 16, num_layers=2, out_channels=16)
        result = train_node_model(data, name, config, encoder=model, seed=3, progress=False)
        seed_everything(3)
        method = cls(copy.deepcopy(model), **options)
    else:
        config = config.with_overrides(out_channels=16, hidden_channels=16)
        result = train_node_model(data, name, config, seed=3, progress=False)
        seed_everything(3)
        method = cls(GraphEncoder.from_config(10, config), **options)
    losses, embeddings = plain_loop(method, data, config)
    assert torch.allclose(torch.tensor(losses), torch.tensor(result.losses), rtol=1e-10)
    assert torch.allclose(embeddings, result.embeddings, rtol=1e-9, atol=1e-12)


def test_a_method_trains_on_pygs_neighbor_loader_batches():
    """A sampled subgraph's loss is over its seeds (``data.batch_size``), the others only
    feed them (PyG's ``NeighborLoader``, or the library's torch sampler where PyG's backends
    are missing: the same batches)."""
    data = graph(num_nodes=80)
    method = GRACE(GCN(10, 16, num_layers=2, out_channels=16), proj_hidden=16)
    loader = neighbor_loader(data, [4, 4], batch_size=20, shuffle=False)
    batch = next(iter(loader))
    assert batch.num_nodes > batch.batch_size
    seen = []
    method.head.register_forward_hook(lambda module, args, out: seen.append(args[0].size(0)))
    loss = method(batch)
    loss.backward()
    assert seen == [20, 20] and torch.isfinite(loss)


def test_a_method_refuses_a_graph_it_cannot_read_naming_the_field():
    method = GRACE(GCN(10, 16, num_layers=2, out_channels=16), proj_hidden=16)
    data = graph()
    data.edge_index = torch.tensor([[0, 99], [1, 0]])
    with pytest.raises(ValueError, match="edge_index"):
        method(data)
    with pytest.raises(ValueError, match="temperature must be"):
        GRACE(GCN(10, 16, num_layers=2, out_channels=16), temperature=-1.0)
    with pytest.raises(ValueError, match="dim: the width"):
        GRACE(torch.nn.Identity())
