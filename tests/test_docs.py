"""The extension page runs: ``docs/extending.md``'s node method, executed as it is written,
registers, trains through the library's loop and the user's, and is checked by its own
options alone; its registration is undone after."""

import re
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn.models import GCN

from cl2gnn.node import REGISTRY, NodeConfig, load_encoder, train_node_model

PAGE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def snippet(marker: str) -> str:
    match = re.search(rf"<!-- extending: {marker} -->\n```python\n(.*?)```", PAGE.read_text(), re.S)
    assert match, f"{PAGE} has no block after <!-- extending: {marker} -->"
    return match.group(1)


@pytest.fixture
def added_method():
    """The page's method, registered for the test and removed after; a method of that name
    registered already (the page followed into the library) is set aside meanwhile."""
    earlier = REGISTRY.pop("align_uniform", None)
    namespace = {"__name__": "extending_example"}
    try:
        exec(compile(snippet("node method"), str(PAGE), "exec"), namespace)
        yield namespace["AlignUniform"]
    finally:
        REGISTRY.pop("align_uniform", None)
        if earlier is not None:
            REGISTRY["align_uniform"] = earlier


def graph():
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(40, 6, generator=generator)
    edges = torch.randint(0, 40, (2, 120), generator=generator)
    return Data(x=x, edge_index=torch.cat([edges, edges.flip(0)], 1))


def test_the_pages_node_method_registers_trains_and_saves(added_method, tmp_path):
    assert REGISTRY["align_uniform"] is added_method
    assert added_method.Options.names() == ("weight", "proj_hidden")
    data = graph()
    config = NodeConfig(epochs=3, out_channels=8, options={"weight": 0.5, "proj_hidden": 8})
    result = train_node_model(data, "align_uniform", config, progress=False)
    assert len(result.losses) == 3 and result.method.options.weight == 0.5
    again = load_encoder(result.save(tmp_path))
    with torch.no_grad():
        assert torch.equal(again(data.x, data.edge_index), result.embeddings)
    mini = train_node_model(data, "align_uniform", config.with_overrides(batch_size=16))
    assert mini.embeddings.shape == result.embeddings.shape  # its mini-batches, by its flag


def test_the_pages_method_is_a_module_to_hold(added_method):
    method = added_method(GCN(6, 8, num_layers=2, out_channels=8), weight=0.25)
    loss = method(graph())
    loss.backward()
    assert (
        method.encoder.lins[0].weight.grad is not None if hasattr(method.encoder, "lins") else True
    )
    with pytest.raises(ValueError, match="weight must be"):
        added_method(GCN(6, 8, num_layers=2, out_channels=8), weight=-1.0)


def test_its_options_are_its_own(added_method):
    """A bound on the new method's option leaves another method's option of that name alone:
    ``temperature`` bounded to (0, 1] by a method refuses 2.0 there, and GRACE still takes it."""
    from typing import Annotated

    from cl2gnn._checks import number
    from cl2gnn.node.methods.base import register_method
    from cl2gnn.node.methods.contrastive import ContrastiveMethod, Views
    from cl2gnn.node.methods.options import Width

    @register_method("bounded_temperature")
    class Bounded(ContrastiveMethod):
        def __init__(
            self,
            encoder,
            *,
            temperature: Annotated[float, number(0.0, 1.0, above=True)] = 0.5,
            proj_hidden: Width = 128,
            views: Views = None,
            dim=None,
            distributed=None,
        ):
            options = self.Options(temperature=temperature, proj_hidden=proj_hidden)
            super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)

    try:
        config = NodeConfig(epochs=1, out_channels=8, options={"temperature": 2.0})
        with pytest.raises(ValueError, match=r"method 'bounded_temperature'.*temperature"):
            train_node_model(graph(), "bounded_temperature", config, progress=False)
        grace = train_node_model(graph(), "grace", config, progress=False)
        assert grace.method.options.temperature == 2.0
    finally:
        REGISTRY.pop("bounded_temperature", None)
