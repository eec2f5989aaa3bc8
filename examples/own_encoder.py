"""Bring your own encoder, graph and views: BGRL trains a two-layer GAT of your own on a
graph built by hand, with views made of PyG transforms; the trained encoder is saved,
reloaded into your class and embeds a second graph.

    python examples/own_encoder.py [--epochs 100] [--out runs/own_encoder]

Measured (100 epochs, 2 cores of an AMD EPYC CPU, about 15 s): probe accuracy 93.3 % against
59.3 % on the raw features; the reloaded encoder on a second graph of the same kind, 85.9 %.
"""

import argparse

import torch
from torch_geometric.data import Data
from torch_geometric.nn import GATConv
from torch_geometric.transforms import Compose

from cl2gnn.node import (
    DropEdge,
    MaskFeatures,
    default_config,
    load_encoder,
    make_split,
    probe_score,
    train_node_model,
)


class GAT(torch.nn.Module):
    """Any module called as ``encoder(x, edge_index)`` and returning ``[N, d]`` will do."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, heads: int = 4) -> None:
        super().__init__()
        self.conv1 = GATConv(in_dim, hidden, heads=heads)
        self.conv2 = GATConv(hidden * heads, out_dim, heads=1)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.conv2(torch.nn.functional.elu(self.conv1(x, edge_index)), edge_index)


def community_graph(seed: int, n: int = 300, classes: int = 3, features: int = 16) -> Data:
    """Three communities: noisy features around each class's centre, most edges inside."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    centres = torch.randn(classes, features, generator=torch.Generator().manual_seed(0))
    x = centres[y] + 2.0 * torch.randn(n, features, generator=gen)
    source = torch.randint(n, (8 * n,), generator=gen)
    target = torch.randint(n, (8 * n,), generator=gen)
    keep = (y[source] == y[target]) | (torch.rand(8 * n, generator=gen) < 0.2)
    edge_index = torch.stack([source[keep], target[keep]])
    return Data(x=x, edge_index=torch.cat([edge_index, edge_index.flip(0)], 1), y=y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--out", default="runs/own_encoder")
    args = parser.parse_args()

    torch.manual_seed(0)  # your encoder's initial weights
    data = community_graph(seed=0)
    encoder = GAT(16, 32, 64)
    # BGRL's recipe for your encoder (the built-in encoder's fields left out); its features
    # are Gaussian, so without the recipe's row normalisation
    config = default_config(data, "bgrl", encoder=encoder).with_overrides(
        epochs=args.epochs, lr_warmup=args.epochs // 10, normalize_features=False
    )
    views = (  # one per view; any callable Data -> Data
        Compose([DropEdge(0.2), MaskFeatures(0.2)]),
        Compose([DropEdge(0.4), MaskFeatures(0.1)]),
    )
    result = train_node_model(data, "bgrl", config, encoder=encoder, augment=views)

    split = make_split("grace", data, seed=0)  # 10 % of the nodes train the probe
    print(
        f"BGRL with your GAT, probe accuracy: {probe_score(result.embeddings, data.y, split):.1f} %"
    )
    print(f"Baseline (raw features), probe accuracy: {probe_score(data.x, data.y, split):.1f} %")

    folder = result.save(args.out)  # encoder.pt, embeddings.pt, losses, checkpoint.pt
    encoder = load_encoder(folder, encoder=GAT(16, 32, 64))  # your class, the saved weights
    with torch.no_grad():
        assert torch.equal(encoder(data.x, data.edge_index), result.embeddings)
        other = community_graph(seed=1)
        embeddings = encoder(other.x, other.edge_index)
    score = probe_score(embeddings, other.y, make_split("grace", other, seed=0))
    print(f"The reloaded encoder on a second graph, probe accuracy: {score:.1f} %")


if __name__ == "__main__":
    main()
