"""The GPU goals as ratios, each measured side by side in one run (the parts of
``benchmarks/speed/gpu.sh``, which runs each under its own time limit and prints the table)::

    python -m benchmarks.speed.gpu_ratios PART --out DIR [--grace-code DIR] [--dry]
    python -m benchmarks.speed.gpu_ratios table --out DIR [--save]

Each part appends its rows to ``DIR/ratios.jsonl``, a measured ratio or a line saying what
was skipped and why (no CUDA, no Triton, no lightly, no GRACE checkout, no Cora):

* ``cora``: a GRACE epoch on Cora, cl2gnn (``train_node_model``) against GRACE's own code
  (``node_speed_grace``'s children), and ``captured``: the full-batch step with its forward
  and loss under ``torch.compile(mode="reduce-overhead")`` (CUDA graphs), the eager step
  where that fails (the row says which ran);
* ``loss``: the exact loss's forward + backward (``3 N² d`` multiply-adds) against the
  device's square-GEMM rate in the same precision: dense (IEEE), Triton IEEE, TF32 and bf16
  products (``matmul_dtype``);
* ``knn``: ``knn_graph`` (torch tiles, exact) on 100k and 1M points against a plain torch
  brute force (GEMM and ``topk`` over whole rows), exact rows checked in float64;
* ``simclr``: steps of a SimCLR epoch (ResNet-18, batch 512, device-side views of
  CIFAR-sized images) with cl2gnn's InfoNCE against the same loop with lightly's
  ``NTXentLoss``;
* ``profile``: one profiler pass over Cora epochs: CUDA kernels per epoch and the share of
  the wall time the GPU is busy.

``--dry``: the same code on the CPU with small sizes (``DRY=1 gpu.sh``, run by CI): ratios
of a rehearsal, not measurements.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._shared.operators import TAU, markdown_table, sync, timed_on
from cl2gnn.cli import cmdline

PARTS = ("cora", "loss", "knn", "simclr", "profile")
# (full run, --dry) sizes
LOSS_CASES = {  # (label, form, precision, rows)
    False: [
        ("dense, IEEE", "dense", "ieee", 7_327),
        ("Triton, IEEE", "triton", "ieee", 65_536),
        ("Triton, TF32", "triton", "tf32", 262_144),
        ("Triton, bf16 products", "triton", "bf16", 65_536),
        ("Triton, bf16 products", "triton", "bf16", 1_048_576),
    ],
    True: [("dense, IEEE", "dense", "ieee", 256), ("Triton, IEEE", "triton", "ieee", 256)],
}
KNN_SIZES = {False: (100_000, 1_000_000), True: (3_000,)}
KNN_PEER_QUERIES = 131_072  # the brute force timed on this many query rows, then scaled
EPOCHS = {False: 100, True: 2}
SIMCLR = {False: ("resnet18", 512, 30), True: ("convnet", 16, 2)}  # arch, batch, steps


def record(out: Path, part: str, measure: str, **cells) -> None:
    """One row of ``out/ratios.jsonl``: ``ours``, ``peer`` and ``ratio`` (and ``goal``,
    ``note``), or ``skipped``: why nothing was measured."""
    row = {"part": part, "measure": measure, **cells}
    with open(out / "ratios.jsonl", "a") as file:
        file.write(json.dumps(row) + "\n")
    print(row, flush=True)


def device_of(dry: bool):
    import torch

    return torch.device("cpu" if dry else "cuda")


def timed(device, step, repeats: int) -> float:
    """Median seconds of ``step()`` over ``repeats`` calls after one warm-up."""
    step()
    return statistics.median(timed_on(device, step)[1] for _ in range(repeats))


# --- loss: the exact loss against the device's GEMM rate ---------------------------------


def gemm_rate(device, precision: str, size: int) -> float:
    """Multiply-adds per second of a square GEMM in ``precision`` (float32 IEEE or TF32
    operands, or bf16 ones)."""
    import torch

    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a = torch.randn(size, size, device=device, dtype=dtype)
    with float32_products(precision):
        return size**3 / timed(device, lambda: torch.mm(a, a), 5)


def float32_products(precision: str):
    """torch's float32 product setting for the block (TF32 or IEEE), restored after it."""
    import contextlib

    import torch

    @contextlib.contextmanager
    def setting():
        matmul = torch.backends.cuda.matmul
        before = matmul.fp32_precision
        matmul.fp32_precision = "tf32" if precision == "tf32" else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision = before

    return setting()


def loss_part(args, out: Path) -> None:
    import torch
    import torch.nn.functional as F

    from cl2gnn.nn import UniformAttention, tiled_triton

    device = device_of(args.dry)
    rates = {}
    for label, form, precision, rows in LOSS_CASES[args.dry]:
        measure = f"exact loss, {label}, N = {rows:,}: share of the GEMM rate"
        if form == "triton" and not tiled_triton.supports(device, torch.float32, 128):
            record(out, "loss", measure, skipped="Triton needs CUDA and triton")
            continue
        matmul_dtype = "bfloat16" if precision == "bf16" else None
        operator = UniformAttention(temperature=TAU, implementation=form, matmul_dtype=matmul_dtype)
        x = F.normalize(torch.randn(rows, 128, device=device), dim=1).requires_grad_(True)

        def step(operator=operator, x=x):
            operator.energy(x).backward()

        with float32_products(precision):
            seconds = timed(device, step, 1 if rows > 100_000 else 3)
        if precision not in rates:
            rates[precision] = gemm_rate(device, precision, 256 if args.dry else 8192)
        rate = 3 * rows * rows * 128 / seconds
        goal = "≥ 0.50" if precision == "bf16" and rows >= 2**20 else ""
        record(
            out,
            "loss",
            measure,
            ours=f"{rate / 1e12:.2f} TMAC/s ({seconds:.3f} s)",
            peer=f"{rates[precision] / 1e12:.2f} TMAC/s",
            ratio=rate / rates[precision],
            goal=goal,
        )
        del x


# --- knn: the exact tiles against a plain brute force ---------------------------------------


def brute_force_knn(x, k: int, queries):
    """Each query row's ``k`` nearest other rows by a plain GEMM and ``topk`` over the whole
    row (float32, squared distances from the norms)."""
    import torch

    norms = x.square().sum(1)
    found = []
    for block in queries.split(4096):
        distance = norms[block, None] - 2 * x[block] @ x.T + norms[None]
        distance[torch.arange(block.numel()), block] = float("inf")
        found.append(distance.topk(k, dim=1, largest=False).indices)
    return torch.cat(found)


def exact_rows(x, found, k: int, rows) -> float:
    """The share of ``rows`` whose found neighbors are the float64 brute force's set."""
    import torch

    x64 = x.double()
    same = []
    for block in rows.split(256):
        distance = torch.cdist(x64[block], x64)
        distance[torch.arange(block.numel()), block] = float("inf")
        exact = distance.topk(k, dim=1, largest=False).indices.sort(1).values
        same.append((found[block].sort(1).values == exact).all(1))
    return float(torch.cat(same).double().mean())


def knn_part(args, out: Path) -> None:
    import torch

    from benchmarks.speed.knn_build import clustered_points
    from cl2gnn.graphs import knn_graph

    device, k = device_of(args.dry), 10
    for n in KNN_SIZES[args.dry]:
        x = clustered_points(n, 128).to(device)
        knn_graph(x[:1000], k, "l2", backend="torch")  # the device's first call
        graph, ours = timed_on(device, knn_graph, x, k, "l2", backend="torch")
        found = graph[0].view(n, k)
        sample = torch.randperm(n, device=device)[: min(1000, n)]
        share = exact_rows(x, found, k, sample)
        queries = torch.arange(min(n, KNN_PEER_QUERIES), device=device)
        brute_force_knn(x, k, queries[:4096])  # warm
        peer = timed_on(device, brute_force_knn, x, k, queries)[1] * n / queries.numel()
        record(
            out,
            "knn",
            f"kNN graph, {n:,} × 128, k = {k}: time against a torch brute force",
            ours=f"{ours:.2f} s ({share:.4f} exact rows)",
            peer=f"{peer:.2f} s" + ("" if queries.numel() == n else " (scaled)"),
            ratio=ours / peer,
            goal="≤ 3 s, ≥ 0.999 exact" if n == 1_000_000 else "",
        )
        del x, graph


# --- cora: against GRACE's code, eager and captured --------------------------------------


def child(*command: str) -> dict:
    """A child process's last line, as JSON (each side in its own process)."""
    run = subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, env=dict(os.environ)
    )
    if run.returncode:
        raise RuntimeError((run.stderr.strip().splitlines() or ["no output"])[-1])
    return json.loads(run.stdout.strip().splitlines()[-1])


def cora_part(args, out: Path) -> None:
    measures = ("eager", "captured")
    if not args.grace_code and not args.dry:  # a rehearsal runs cl2gnn's side anyway
        for measure in measures:
            record(out, "cora", f"Cora epoch, {measure}: against GRACE's code",
                   skipped="no GRACE checkout (GRACE_CODE)")  # fmt: skip
        return
    device, epochs = str(device_of(args.dry)), str(EPOCHS[args.dry])
    grace = ("-m", "benchmarks.speed.node_speed_grace", "--epochs", epochs, "--device", device)
    grace += ("--no-score",) if args.dry else ()  # a rehearsal's probe is not worth its time
    ours = child(*grace, "--child", "cl2gnn", "--grace-code", args.grace_code or ".")
    captured = child("-m", "benchmarks.speed.gpu_ratios", "captured", "--out", str(out),
                     *dry_flag(args))  # fmt: skip
    if not args.grace_code:
        for measure in measures:
            alone = f"no GRACE checkout (cl2gnn alone: {ours['epoch_ms']:.1f} ms)"
            record(out, "cora", f"Cora epoch, {measure}: against GRACE's code", skipped=alone)
        return
    theirs = child(*grace, "--child", "grace", "--grace-code", args.grace_code)
    for measure, result in (("eager", ours), (f"captured ({captured['ran']})", captured)):
        record(
            out,
            "cora",
            f"Cora epoch, {measure}: against GRACE's code",
            ours=f"{result['epoch_ms']:.2f} ms{accuracy(result)}",
            peer=f"{theirs['epoch_ms']:.2f} ms{accuracy(theirs)}",
            ratio=result["epoch_ms"] / theirs["epoch_ms"],
            goal="≤ 0.8 (0.5)",
        )


def accuracy(result: dict) -> str:
    return "" if result["score"] is None else f" ({result['score']:.1f}%)"


def grace_trainer(device):
    from cl2gnn.node import default_config, load_node_dataset
    from cl2gnn.node.training.fullbatch import FullBatchTrainer

    data = load_node_dataset("Cora")
    config = default_config(data, "grace", graph=data.name)  # GRACE's published for Cora
    return FullBatchTrainer(data, "grace", config, device=device)


def captured_child(args) -> dict:
    """GRACE's step with its forward compiled (CUDA graphs on a GPU), the eager one where
    that fails; the epoch time and the embeddings' probe score."""
    import torch

    from benchmarks.speed.node_speed_grace import _score

    device = device_of(args.dry)
    trainer = grace_trainer(device)
    forward = trainer.loss_on_fresh_views
    # CUDA graphs on a GPU; a rehearsal on the CPU: dynamo's capture alone (fullgraph)
    cuda = device.type == "cuda"
    mode, backend = ("reduce-overhead", "inductor") if cuda else (None, "eager")
    compiled = torch.compile(forward, mode=mode, backend=backend, fullgraph=True)
    ran = f"compiled, {mode or backend}"
    try:
        for _ in range(1 if args.dry else 3):  # the compilation, then CUDA graphs' warm-up
            trainer.optimise(compiled())
    except Exception as error:  # the row names what ran instead
        compiled, ran = forward, f"eager: compile failed, {type(error).__name__}"
    epochs = EPOCHS[args.dry]
    sync(device)
    start = time.perf_counter()
    for _ in range(epochs):
        trainer.optimise(compiled())
    sync(device)
    epoch_ms = 1000 * (time.perf_counter() - start) / epochs
    score = None if args.dry else _score(trainer.embed())
    return {"epoch_ms": epoch_ms, "score": score, "ran": ran}


# --- simclr: the same loop with lightly's loss --------------------------------------------


def simclr_part(args, out: Path) -> None:
    measure = "SimCLR epoch (ResNet-18, batch 512): against lightly's NTXentLoss"
    try:
        from lightly.loss import NTXentLoss
    except ImportError:
        record(out, "simclr", measure, skipped="lightly not installed")
        return
    import torch

    from cl2gnn.losses import InfoNCELoss
    from cl2gnn.vision import MultiViewAugment, SSLNet

    device = device_of(args.dry)
    arch, batch, steps = SIMCLR[args.dry]
    images = torch.randint(0, 256, (batch * 8, 3, 32, 32), dtype=torch.uint8, device=device)
    augment = MultiViewAugment(size=32)
    seconds = {}
    for name, loss_fn in (("cl2gnn", InfoNCELoss(0.2)), ("lightly", NTXentLoss(0.2))):
        torch.manual_seed(0)
        model = SSLNet(arch, in_channels=3, proj_dims=(512, 128)).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        generator = torch.Generator(device=device).manual_seed(0)

        def step(model=model, optimizer=optimizer, loss_fn=loss_fn, generator=generator):
            chosen = torch.randint(0, images.size(0), (batch,), device=device)
            views = [augment(images[chosen], generator) for _ in range(2)]
            loss = loss_fn(model(views[0])[1], model(views[1])[1])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        seconds[name] = timed(device, step, steps)
    per_epoch = 50_000 // 512  # CIFAR-10's steps per epoch at batch 512
    record(
        out,
        "simclr",
        measure,
        ours=f"{seconds['cl2gnn'] * per_epoch:.1f} s per epoch",
        peer=f"{seconds['lightly'] * per_epoch:.1f} s per epoch",
        ratio=seconds["cl2gnn"] / seconds["lightly"],
        note=f"median step of {steps} (batch {batch}) × {per_epoch} steps",
    )


# --- profile: kernels per epoch and the GPU's busy share ---------------------------------


def busy_share(kernels, seconds: float) -> float:
    """The union of the kernels' intervals (µs) over ``seconds`` of wall time."""
    busy, end = 0.0, float("-inf")
    for start, stop in sorted((k.time_range.start, k.time_range.end) for k in kernels):
        busy += max(0.0, stop - max(start, end))
        end = max(end, stop)
    return busy / 1e6 / seconds


def profile_part(args, out: Path) -> None:
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    device = device_of(args.dry)
    trainer = grace_trainer(device)
    for _ in range(1 if args.dry else 3):
        trainer.epoch()
    epochs = 2 if args.dry else 10
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as recorded:
        sync(device)
        start = time.perf_counter()
        for _ in range(epochs):
            trainer.epoch()
        sync(device)
        seconds = time.perf_counter() - start
    events = recorded.events()
    operators = sum(1 for e in events if e.name.startswith("aten::")) / epochs
    measure = "Cora epoch under the profiler: kernels per epoch, GPU busy share"
    if device.type != "cuda":
        record(out, "profile", measure, skipped=f"no CUDA ({operators:.0f} aten ops per epoch)")
        return
    kernels = [e for e in events if e.device_type == DeviceType.CUDA]
    record(
        out,
        "profile",
        measure,
        ours=f"{len(kernels) / epochs:.0f} kernels, {operators:.0f} aten ops per epoch",
        peer=f"{1000 * seconds / epochs:.2f} ms per epoch",
        ratio=busy_share(kernels, seconds),
        note="ratio: the share of the wall time some kernel runs",
    )


# --- the table ------------------------------------------------------------------------------


def table(args, out: Path) -> None:
    rows = [json.loads(line) for line in (out / "ratios.jsonl").read_text().splitlines()]
    columns = ["part", "measure", "cl2gnn", "peer", "ratio", "goal"]
    cells = [
        [r["part"], r["measure"], r.get("ours", "—"), r.get("peer", "—"),
         f"{r['ratio']:.2f}" if "ratio" in r else f"skipped: {r['skipped']}", r.get("goal", "")]
        for r in rows
    ]  # fmt: skip
    print(markdown_table(columns, cells))
    if args.save:
        from benchmarks._shared.results import save_table

        print(
            save_table(
                "gpu_ratios",
                "Speed",
                "The GPU goals as ratios, one run of benchmarks/speed/gpu.sh",
                columns,
                cells,
                device="cuda",
                command="bash benchmarks/speed/gpu.sh OUT (GRACE_CODE=<a GRACE checkout>)",
                notes="Each ratio measured side by side in the same run on one GPU.",
            )
        )


MEASURE = {
    "cora": cora_part,
    "loss": loss_part,
    "knn": knn_part,
    "simclr": simclr_part,
    "profile": profile_part,
}


def dry_flag(args) -> list[str]:
    return ["--dry"] if args.dry else []


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=(*PARTS, "captured", "table"))
    parser.add_argument("--out", type=cmdline.output_dir, required=True)
    parser.add_argument("--grace-code", type=cmdline.existing_path)
    parser.add_argument("--dry", action="store_true", help="a rehearsal on the CPU")
    parser.add_argument("--save", action="store_true", help="table: the results page's too")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.part == "captured":
        print(json.dumps(captured_child(args)))
        return
    if args.part == "table":
        table(args, out)
        return
    import torch

    if not args.dry and not torch.cuda.is_available():
        record(out, args.part, args.part, skipped="no CUDA device")
        return
    MEASURE[args.part](args, out)


if __name__ == "__main__":
    main()
