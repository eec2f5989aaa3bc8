"""How long a full-batch Cora epoch takes against GRACE's own code (CRIPAC-DIG/GRACE, its
``model.py`` imported from a checkout and trained by its ``train()``'s steps), each with its
Cora configuration, the two alternating process by process on the same machine, and both
embeddings scored by the same probe (GRACE's protocol), so that the speed comes at equal
accuracy::

    git clone https://github.com/CRIPAC-DIG/GRACE /tmp/GRACE
    python -m benchmarks.speed.node_speed_grace --grace-code /tmp/GRACE --rounds 3 --epochs 200

cl2gnn's epoch is ``TrainResult.epoch_ms`` (the epochs from the first read-back of the loss
to the last, the first epoch left out); GRACE's the same span of its loop, which reads its
loss back every epoch (``loss.item()``). ``--device cuda`` times both on a GPU."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cl2gnn.cli import cmdline

SEED = 0


def grace_child(code: Path, epochs: int, device: str, score: bool = True) -> dict:
    """GRACE's own model and training step (its ``train.py``) on Cora, its configuration."""
    import torch
    import torch.nn.functional as F
    import torch_geometric.transforms as T
    from torch_geometric.nn import GCNConv
    from torch_geometric.utils import dropout_edge

    spec = importlib.util.spec_from_file_location("grace_model", Path(code) / "model.py")
    grace = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grace)  # GRACE's model.py
    Encoder, Model, drop_feature = grace.Encoder, grace.Model, grace.drop_feature

    from cl2gnn.node import load_node_dataset

    torch.manual_seed(SEED)
    data = T.NormalizeFeatures()(load_node_dataset("Cora")).to(device)  # as GRACE loads it
    encoder = Encoder(data.num_features, 128, F.relu, base_model=GCNConv, k=2)
    model = Model(encoder, 128, 128, 0.4).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0005, weight_decay=0.00001)

    def train() -> float:  # GRACE's train(), dropout_adj being PyG's dropout_edge now
        model.train()
        optimizer.zero_grad()
        edge_index_1 = dropout_edge(data.edge_index, p=0.2)[0]
        edge_index_2 = dropout_edge(data.edge_index, p=0.4)[0]
        x_1, x_2 = drop_feature(data.x, 0.3), drop_feature(data.x, 0.4)
        loss = model.loss(model(x_1, edge_index_1), model(x_2, edge_index_2), batch_size=0)
        loss.backward()
        optimizer.step()
        return loss.item()

    train()
    start = time.perf_counter()
    for _ in range(epochs - 1):
        train()
    epoch_ms = 1000 * (time.perf_counter() - start) / (epochs - 1)
    model.eval()
    with torch.no_grad():
        embeddings = model(data.x, data.edge_index).cpu()
    return {"epoch_ms": epoch_ms, "score": _score(embeddings) if score else None}


def cl2gnn_child(epochs: int, device: str, matmul_dtype: str | None, score: bool = True) -> dict:
    from cl2gnn.node import default_config, load_node_dataset, train_node_model

    data = load_node_dataset("Cora")
    config = default_config(data, "grace", graph=data.name)
    config = config.with_overrides(epochs=epochs, matmul_dtype=matmul_dtype)
    result = train_node_model(data, "grace", config, seed=SEED, device=device, progress=False)
    return {"epoch_ms": result.epoch_ms, "score": _score(result.embeddings) if score else None}


def _score(embeddings) -> float:
    from cl2gnn.node import load_node_dataset, make_split, probe_score

    data = load_node_dataset("Cora")
    return probe_score(embeddings, data.y, make_split("grace", data, seed=SEED))  # in %


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grace-code", type=cmdline.existing_path, required=True)
    parser.add_argument("--rounds", type=cmdline.positive_int, default=3)
    parser.add_argument("--epochs", type=cmdline.int_range(2), default=200)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--matmul-dtype",
        choices=("bfloat16",),
        help="also cl2gnn with its exact loss's CPU tiles multiplied in bfloat16",
    )
    parser.add_argument("--child", choices=("grace", "cl2gnn"), help=argparse.SUPPRESS)
    # a child's probe left out (a rehearsal's: gpu_ratios --dry)
    parser.add_argument("--no-score", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "grace":
        print(json.dumps(grace_child(args.grace_code, args.epochs, args.device, not args.no_score)))
        return
    if args.child == "cl2gnn":
        child = cl2gnn_child(args.epochs, args.device, args.matmul_dtype, not args.no_score)
        print(json.dumps(child))
        return
    if not (Path(args.grace_code) / "model.py").is_file():
        parser.error(f"--grace-code: {args.grace_code} holds no model.py (GRACE's checkout)")
    from benchmarks._shared.results import save_table

    # what each process runs: GRACE's code, cl2gnn, and cl2gnn with bfloat16 products
    runs = {"GRACE's code": ("grace", []), "cl2gnn": ("cl2gnn", [])}
    if args.matmul_dtype:
        runs["cl2gnn, bf16 products"] = ("cl2gnn", ["--matmul-dtype", args.matmul_dtype])
    rows = []
    for round_ in range(args.rounds):
        measured = {}
        for label, (child, extra) in runs.items():
            command = [sys.executable, __file__, "--child", child, "--grace-code"]
            command += [str(args.grace_code), "--epochs", str(args.epochs)]
            command += ["--device", args.device, *extra]
            run = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
            if run.returncode:
                cmdline.fail(parser.prog, f"{label}: {run.stderr.strip().splitlines()[-1]}")
            measured[label] = json.loads(run.stdout.strip().splitlines()[-1])
        theirs = measured["GRACE's code"]["epoch_ms"]
        row = [round_]
        for result in measured.values():
            row += [f"{result['epoch_ms']:.1f}", f"{result['epoch_ms'] / theirs:.2f}"]
            row += [f"{result['score']:.1f}"]
        rows.append(row)
        print(rows[-1], flush=True)
    columns = ["round"]
    for label in runs:
        columns += [f"{label} ms/epoch", f"{label} / GRACE's code", f"{label} accuracy"]
    save_table(
        "node_speed_grace" + ("_cuda" if args.device.startswith("cuda") else ""),
        "Speed",
        "Cora full-batch epochs against GRACE's own code (accuracy: one seed)",
        columns,
        rows,
        device=args.device,
        notes=f"Each with its Cora configuration (GRACE's config.yaml; cl2gnn's default_config, "
        f"the same numbers on raw features), {args.epochs} epochs, seed {SEED}, one process "
        "each, alternating; the first epoch left out of each. Accuracy: the same probe of "
        "each one's embeddings (GRACE's protocol, split seed 0, one run: a check that each "
        "trained, not a comparison of accuracy).",
    )


if __name__ == "__main__":
    main()
