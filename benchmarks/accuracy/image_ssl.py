"""Image SSL speed and short-schedule accuracy.

    python -m benchmarks.accuracy.image_ssl throughput --arch resnet18 --batch-size 512 --steps 20
    python -m benchmarks.accuracy.image_ssl variants --dataset cifar10 --epochs 10

``throughput``: SimCLR training steps (two views, augmentation included) on the current
device: images/s and the seconds one CIFAR-10 epoch (50,000 images) would take; with
``--profile FILE`` the same steps again under torch's profiler, the operators' table to FILE.
``variants``: SimCLR, +attention, the kernel losses, SimSiam and +multi-stage on the same
schedule (last-epoch kNN accuracy, not the best epoch), after the untrained backbone's kNN
accuracy (the same initialisation: the floor training starts from). Markdown to stdout, rows
to --json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

from cl2gnn import _files
from cl2gnn.cli import cmdline
from cl2gnn.cli.catalogue import ARCHS
from cl2gnn.cli.catalogue import IMAGE_DATASETS as DATASETS
from cl2gnn.cli.pretrain import KNN_K, augment_for, default_device, load_split

VARIANTS = {
    "SimCLR": ("simclr", []),
    "SimCLR + attention (β=1)": ("simclr", ["--attention", "1.0"]),
    "SimCLR + Laplacian kernel": ("simclr", ["--kernel", "laplacian"]),
    "SimCLR + exp-0.5 kernel": ("simclr", ["--kernel", "exp0.5"]),
    "SimCLR + simple-sum kernel": ("simclr", ["--kernel", "sum"]),
    "SimCLR + concat-sum kernel": ("simclr", ["--kernel", "concat"]),
    "SimSiam": ("simsiam", []),
    "SimSiam + multi-stage (s=2)": ("simsiam", ["--multistage", "2"]),
}


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name()
    import platform
    import subprocess

    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    names = [s.split(":", 1)[1].strip() for s in out.splitlines() if "Model name" in s]
    return f"{names[0] if names else platform.processor()} ({torch.get_num_threads()} threads)"


def throughput(
    arch: str, batch_size: int, steps: int, device: str, compile_: bool, profile=None
) -> dict:
    import torch

    from cl2gnn.vision.augment import MultiViewAugment
    from cl2gnn.vision.data import ImageSet
    from cl2gnn.vision.models import SSLNet
    from cl2gnn.vision.objectives import SimCLRObjective
    from cl2gnn.vision.train import PretrainConfig, Pretrainer

    gen = torch.Generator().manual_seed(0)
    images = torch.randint(
        0, 256, (batch_size * (steps + 2), 3, 32, 32), generator=gen, dtype=torch.uint8
    )
    data = ImageSet(images, torch.zeros(len(images), dtype=torch.long), ["x"])
    model = SSLNet(arch, 3, proj_dims=(2048, 128))
    config = PretrainConfig(epochs=1, batch_size=batch_size, compile=compile_, warmup_epochs=1)
    trainer = Pretrainer(
        model, SimCLRObjective(0.5), data, data, MultiViewAugment(), config, device
    )
    order = torch.arange(len(images), device=trainer.device)
    for b in range(2):  # warm-up (and compilation)
        trainer.train_step(order[b * batch_size : (b + 1) * batch_size])
    if trainer.cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for b in range(2, steps + 2):
        loss = trainer.train_step(order[b * batch_size : (b + 1) * batch_size])
    float(loss)  # waits for the device
    seconds = time.perf_counter() - start
    per_second = steps * batch_size / seconds
    if profile is not None:  # the same steps again, profiled (apart: the profiler costs time)
        write_profile(trainer, order, batch_size, steps, profile)
    return {
        "arch": arch,
        "batch_size": batch_size,
        "device": device_name(device),
        "images_per_second": per_second,
        "views_per_second": 2 * per_second,
        "cifar10_epoch_seconds": 50_000 / per_second,
        "compile": compile_,
    }


def write_profile(trainer, order, batch_size: int, steps: int, path: Path) -> None:
    """The operators of ``steps`` training steps by their own time on the device (the CPU
    where there is none), the costliest first: where a step's time goes."""
    import torch
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if trainer.cuda else [])
    with torch.profiler.profile(activities=activities) as profiler:
        for b in range(2, steps + 2):
            loss = trainer.train_step(order[b * batch_size : (b + 1) * batch_size])
        float(loss)
    sort_by = "self_device_time_total" if trainer.cuda else "self_cpu_time_total"
    table = profiler.key_averages().table(sort_by=sort_by, row_limit=30)
    _files.write_text_atomic(path, f"{steps} SimCLR steps, batch {batch_size}\n{table}\n")


def load_example(script: str):
    """The image pre-training command ``cl2gnn {script}``'s module."""
    return importlib.import_module(f"cl2gnn.cli.{script}")


def untrained(dataset: str, extra: list[str]) -> dict:
    """kNN accuracy of the backbone as the examples initialise it (same seed), before training."""
    import torch

    from cl2gnn.vision.models import SSLNet
    from cl2gnn.vision.train import PretrainConfig, Pretrainer

    _, args = load_example("simclr").parse(["--dataset", dataset, *extra])
    train, test = load_split(args)
    torch.manual_seed(args.seed)
    model = SSLNet(args.arch, train.images.size(1))  # the backbone is built first: same weights
    config = PretrainConfig(batch_size=min(256, len(train)), knn_k=KNN_K.get(dataset, 200))
    augment = augment_for(dataset, train.images)
    trainer = Pretrainer(model, torch.nn.Identity(), train, test, augment, config, args.device)
    return {
        "variant": "untrained backbone",
        "knn_accuracy": trainer.knn_monitor(),
        "epoch_seconds": None,  # no training
        "device": trainer.device_name,
        "dataset": dataset,
        "arch": args.arch,
    }


def variant_args(dataset: str, epochs: int, flags: list[str], extra: list[str]) -> list[str]:
    return ["--dataset", dataset, "--epochs", str(epochs), "--no-progress", *flags, *extra]


def check_variants(prog: str, dataset: str, epochs: int, extra: list[str]) -> str | None:
    """Parse every variant's command line with its example's checks, so that a bad
    ``--extra`` fails at once (``prog: error: ...``), not after the variants before it;
    returns the ``--device`` given in ``--extra`` (None: none given)."""
    device = None
    for script, flags in VARIANTS.values():
        _, parsed = load_example(script).parse(
            variant_args(dataset, epochs, flags, extra), prog=prog
        )
        device = parsed.device
    return device


def variants(dataset: str, epochs: int, extra: list[str]) -> list[dict]:
    rows = [untrained(dataset, extra)]
    for name, (script, flags) in VARIANTS.items():
        result = load_example(script).main(variant_args(dataset, epochs, flags, extra))
        rows.append({"variant": name, **{k: v for k, v in result.items() if k != "knn_history"}})
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main() -> None:
    cmdline.quiet_pyg_warning()
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    p = sub.add_parser("throughput")
    p.add_argument("--arch", default="resnet18", choices=ARCHS)
    # SimCLR's negatives are the batch's other images: two at least
    p.add_argument("--batch-size", type=cmdline.int_range(2), default=512)
    p.add_argument("--steps", type=cmdline.positive_int, default=20)
    p.add_argument("--compile", action="store_true")
    p.add_argument(
        "--profile", type=cmdline.output_file, help="also profile the steps: operator table here"
    )
    p = sub.add_parser("variants")
    p.add_argument("--dataset", default="cifar10", choices=DATASETS)
    p.add_argument("--epochs", type=cmdline.positive_int, default=10)
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="passed to the examples")
    for p in sub.choices.values():
        p.add_argument("--device", type=cmdline.device, help="default: cuda where available")
        p.add_argument("--json", type=cmdline.output_file)
    args = parser.parse_args()
    prog = sub.choices[args.bench].prog
    if args.bench == "variants":  # --extra's --device wins, as in the examples
        args.device = check_variants(prog, args.dataset, args.epochs, args.extra) or args.device
    with cmdline.user_errors(prog):
        run(args)


def run(args: argparse.Namespace) -> None:
    args.device = args.device or default_device()
    cmdline.check_device(args.device)
    if args.bench == "throughput":
        row = throughput(
            args.arch, args.batch_size, args.steps, args.device, args.compile, args.profile
        )
        rows = [row]
        text = (
            "| device | arch | batch | images/s | s per CIFAR-10 epoch |\n|---|---|---|---|---|\n"
            f"| {row['device']} | {row['arch']} | {row['batch_size']} | "
            f"{row['images_per_second']:.0f} | {row['cifar10_epoch_seconds']:.1f} |"
        )
    else:
        rows = variants(args.dataset, args.epochs, ["--device", args.device, *args.extra])
        lines = ["| variant | kNN accuracy (last epoch) | s/epoch | device |", "|---|---|---|---|"]
        for r in rows:
            accuracy = f"{r['knn_accuracy']:.4f}"
            seconds = "—" if r["epoch_seconds"] is None else f"{r['epoch_seconds']:.1f}"
            lines.append(f"| {r['variant']} | {accuracy} | {seconds} | {r['device']} |")
        text = "\n".join(lines)
    print(text)
    if args.json:
        _files.write_text_atomic(args.json, json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
