"""A 32-layer GCN on Cora with ContrastiveNorm after every hidden convolution, against the
same GCN without normalisation: deep message passing oversmooths (every node's features
converge), the uniformity step of contrastive learning spreads them apart again (ContraNorm,
Guo et al., ICLR 2023).

    CL2GNN_DATA=/work/shared/data python examples/deep_gcn.py   # reads planetoid/Cora/raw

The whole study (depths 2 to 64, BatchNorm, PairNorm, DiffGroupNorm) is
``benchmarks/accuracy/depth.py``; its table is on ``benchmarks/results/accuracy.md``.
"""

import argparse
import itertools

import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv

from cl2gnn.datasets import load_node_dataset
from cl2gnn.nn import ContrastiveNorm

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--layers", type=int, default=32)
parser.add_argument("--keys", type=int, default=128, help="sampled keys per ContrastiveNorm")
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()


class DeepGCN(torch.nn.Module):
    def __init__(self, in_channels, hidden, out_channels, layers, norm: bool) -> None:
        super().__init__()
        sizes = [in_channels] + [hidden] * (layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(
            GCNConv(a, b, cached=True) for a, b in itertools.pairwise(sizes)
        )
        # one step of the uniformity loss (stop-gradient) + LayerNorm per hidden layer
        count = layers - 1 if norm else 0
        self.norms = torch.nn.ModuleList(ContrastiveNorm(hidden) for _ in range(count))

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs[:-1]):
            x = conv(F.dropout(x, 0.5, self.training), edge_index)
            if self.norms:  # the complete affinity graph, estimated from sampled keys
                x = self.norms[i](x, keys=torch.randperm(x.size(0))[: args.keys])
            x = F.relu(x)
        return self.convs[-1](F.dropout(x, 0.5, self.training), edge_index)


def train_and_test(data, norm: bool) -> float:
    """Test accuracy (%) at the epoch of best validation accuracy."""
    torch.manual_seed(args.seed)
    model = DeepGCN(data.num_features, 64, int(data.y.max()) + 1, args.layers, norm)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    best_val, test_at_best = -1.0, 0.0
    for _ in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        out = model(data.x, data.edge_index)
        F.cross_entropy(out[data.train_mask], data.y[data.train_mask]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            pred = model(data.x, data.edge_index).argmax(dim=1)
        val, test = (
            (pred[m] == data.y[m]).float().mean().item() for m in (data.val_mask, data.test_mask)
        )
        if val > best_val:
            best_val, test_at_best = val, test
    return 100 * test_at_best


data = load_node_dataset("Cora")
with_norm, without = train_and_test(data, True), train_and_test(data, False)
print(f"{args.layers}-layer GCN + ContrastiveNorm test accuracy: {with_norm:.1f} %")
print(f"Baseline ({args.layers}-layer GCN, no normalisation) test accuracy: {without:.1f} %")
