"""One way to embed with what was trained, for every registered method: the embeddings
training returns (what the probe read), ``result.embed``, ``result.encoder`` called the PyG
way, the saved ``embeddings.pt``, the saved folder reloaded (:func:`load_encoder`) and the
``cl2gnn embed`` command are the same, bit for bit in full-batch training (the same
computation), to float32 rounding after mini-batches (layer-wise inference against one
forward). With the built-in encoder and with a PyG model of the user's."""

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn.models import GCN

from cl2gnn.cli.main import main
from cl2gnn.datasets import load_node_dataset, write_npz
from cl2gnn.node import REGISTRY, NodeConfig, load_encoder, train_node_model
from cl2gnn.node.methods.mvgrl import MVGRLEncoder
from cl2gnn.node.result import embed

# the methods' options; the built-in encoder's shape apart (refused beside one's own)
OWN = NodeConfig(
    epochs=2, options={"proj_hidden": 8, "predictor_hidden": 8, "diffusion_k": 6, "clusters": 3}
)
CONFIG = OWN.with_overrides(out_channels=8, hidden_channels=16)


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    """A 36-node graph of three communities as a ``.npz`` file (what ``cl2gnn embed``
    reads), and the graph read back from it (what training reads)."""
    gen = torch.Generator().manual_seed(3)
    n = 36
    y = torch.arange(n) % 3
    x = torch.nn.functional.one_hot(y, 5).float() + 0.4 * torch.randn(n, 5, generator=gen)
    source, target = torch.randint(n, (2, 3 * n), generator=gen)
    keep = source < target
    edges = torch.stack([source[keep], target[keep]])
    part = torch.randperm(n, generator=gen) % 4  # half train, a quarter val, a quarter test
    data = Data(
        x=x,
        y=y,
        edge_index=torch.cat([edges, edges.flip(0)], 1),
        train_mask=part < 2,
        val_mask=part == 2,
        test_mask=part == 3,
    )
    path = tmp_path_factory.mktemp("graph") / "communities.npz"
    write_npz(data, path)
    return path, load_node_dataset(str(path))


def users_encoder(in_channels: int) -> torch.nn.Module:
    """A PyG model of the user's (it takes ``edge_weight=``, as MVGRL's diffusion needs)."""
    return GCN(in_channels, 16, num_layers=2, out_channels=8)


@pytest.mark.parametrize("builtin", [True, False], ids=["builtin", "users"])
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_every_way_to_embed_gives_the_probed_embeddings(method, builtin, graph_file, tmp_path):
    path, data = graph_file
    encoder = None if builtin else users_encoder(data.num_features)
    config = CONFIG if builtin else OWN
    result = train_node_model(data, method, config, encoder=encoder, seed=1, progress=False)
    x, edge_index, probed = data.x, data.edge_index, result.embeddings

    assert torch.equal(result.embed(x, edge_index), probed)
    with torch.no_grad():
        assert torch.equal(result.encoder(x, edge_index), probed)
    folder = result.save(tmp_path)
    assert torch.equal(torch.load(folder / "embeddings.pt", weights_only=True), probed)
    again = load_encoder(folder, encoder=None if builtin else users_encoder(data.num_features))
    assert type(again) is type(result.encoder)
    assert torch.equal(embed(again, x, edge_index), probed)
    if builtin:  # the command rebuilds the built-in encoder alone
        out = tmp_path / "embeddings.pt"
        args = ["embed", "--checkpoint", str(folder), "--dataset", str(path), "--out", str(out)]
        assert main(args) == 0
        assert torch.equal(torch.load(out, weights_only=True), probed)


def test_mvgrl_hands_back_and_saves_the_sum_of_its_two_encoders(graph_file, tmp_path):
    """The module that embeds is MVGRL's two encoders, and the embedding is their sum: the
    graph encoder alone misses the diffusion encoder's part."""
    _, data = graph_file
    result = train_node_model(data, "mvgrl", CONFIG, progress=False)
    model = result.encoder
    assert isinstance(model, MVGRLEncoder)
    assert model.encoder is not model.diffusion_encoder
    assert model.diffusion_encoder is result.method.diffusion_encoder
    with torch.no_grad():
        alone = model.encoder(data.x, data.edge_index)
    assert not torch.allclose(alone, result.embeddings, atol=1e-3)
    saved = torch.load(result.save(tmp_path) / "encoder.pt", weights_only=True)
    diffusion = {"alpha": 0.2, "k": CONFIG.options["diffusion_k"], "eps": None}
    assert saved["embedding"] == {"method": "mvgrl", "spec": diffusion}
    assert {key.split(".")[0] for key in saved["state_dict"]} == {"encoder", "diffusion_encoder"}


def test_mini_batch_embeddings_are_the_full_forward_to_float_rounding(graph_file, tmp_path):
    """After mini-batches the probed embeddings come from layer-wise inference; every other
    way runs one forward on the whole graph: equal to float32 rounding, and the reloaded
    folder equal to ``result.embed`` bit for bit."""
    _, data = graph_file
    config = CONFIG.with_overrides(batch_size=12, num_neighbors=(3, 3))
    result = train_node_model(data, "grace", config, progress=False)
    full = result.embed(data.x, data.edge_index)
    torch.testing.assert_close(full, result.embeddings, rtol=1e-5, atol=1e-6)
    again = load_encoder(result.save(tmp_path))
    assert torch.equal(embed(again, data.x, data.edge_index), full)


def test_embed_checks_the_graph_as_training_does(graph_file):
    """``result.embed`` is an entry point: an edge out of range is refused before it
    reaches a kernel."""
    _, data = graph_file
    result = train_node_model(data, "grace", CONFIG, progress=False)
    outside = torch.tensor([[0], [data.num_nodes]])
    with pytest.raises(ValueError, match="edge_index refers to node 36"):
        result.embed(data.x, outside)
    with pytest.raises(ValueError, match="edge_weight"):
        result.embed(data.x, data.edge_index, -torch.ones(data.num_edges))


def test_a_users_encoder_is_loaded_into_a_new_one_and_a_misfit_refused(graph_file, tmp_path):
    _, data = graph_file
    result = train_node_model(
        data, "grace", OWN, encoder=users_encoder(data.num_features), progress=False
    )
    folder = result.save(tmp_path)
    with pytest.raises(ValueError, match=r"your own encoder .* encoder=YourEncoder"):
        load_encoder(folder)
    with pytest.raises(ValueError, match="its weights do not fit"):
        load_encoder(folder, encoder=GCN(data.num_features, 4, num_layers=2))
    builtin = train_node_model(data, "grace", CONFIG, progress=False).save(tmp_path / "b")
    with pytest.raises(ValueError, match=r"encoder: .* holds the built-in encoder"):
        load_encoder(builtin, encoder=users_encoder(data.num_features))


def test_your_encoder_on_the_recipes_normalised_features_embeds_through_its_transform(
    graph_file, tmp_path
):
    """A recipe that row-normalises the features trains your encoder on them: ``result.embed``
    applies the transform as training did, so it gives the probed embeddings where the
    encoder on the raw features does not; the reloaded model applies it itself."""
    _, data = graph_file
    config = OWN.with_overrides(normalize_features=True)
    encoder = users_encoder(data.num_features)
    result = train_node_model(data, "grace", config, encoder=encoder, progress=False)
    x, edge_index, probed = data.x, data.edge_index, result.embeddings
    assert torch.equal(result.embed(x, edge_index), probed)
    assert not torch.allclose(embed(result.encoder, x, edge_index), probed)  # raw x: not it
    again = load_encoder(result.save(tmp_path), encoder=users_encoder(data.num_features))
    assert torch.equal(embed(again, x, edge_index), probed)  # on the raw features
