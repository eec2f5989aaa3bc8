"""The command-line scaffolding shared by ``examples/simclr.py`` and ``examples/simsiam.py``:
dataset-specific defaults, the run, and its outputs (checkpoint, log, JSON)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import torch

from ..distributed import init_from_env, shutdown
from .augment import MultiViewAugment
from .data import DATASETS, ImageSet, load_images
from .models import ARCHS, SSLNet
from .train import PretrainConfig, Pretrainer

DIGITS_STATS = ((0.31,), (0.40,))  # mean / std of scikit-learn's digits in [0, 1]
# the monitor's k = 200 exceeds a digits class (about 144 training images): k = 20 there
KNN_K = {"digits": 20}


def augment_for(dataset: str, images: torch.Tensor) -> MultiViewAugment:
    if dataset == "digits":  # 8×8 strokes: milder crops, no flips (they change digits)
        return MultiViewAugment(
            size=8,
            scale=(0.4, 1.0),
            flip_p=0.0,
            jitter=(0.4, 0.4, 0.0, 0.0),
            gray_p=0.0,
            mean=DIGITS_STATS[0],
            std=DIGITS_STATS[1],
        )
    side = images.size(-1)
    return MultiViewAugment(size=side)


def common_parser(description: str, defaults: dict) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dataset", default="digits", choices=DATASETS)
    parser.add_argument("--data-root", help="dataset folder (default: $CL2GNN_DATA or download)")
    parser.add_argument("--arch", choices=ARCHS, help="default: convnet for digits, else resnet18")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--lr", type=float, help="base learning rate per 256 images")
    parser.add_argument("--weight-decay", type=float)
    parser.add_argument("--optimizer", choices=("sgd", "lars"), default="sgd")
    parser.add_argument(
        "--subset",
        type=int,
        help="train (and monitor) on N images drawn at random, the same for every --seed",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--compile", action="store_true", help="torch.compile (CUDA only)")
    parser.add_argument("--out", help="folder for checkpoint.pt and log.json")
    parser.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt")
    parser.add_argument("--json", help="write the result summary here")
    parser.add_argument("--no-progress", action="store_true")
    parser.set_defaults(**defaults)
    return parser


def load_split(args) -> tuple[ImageSet, ImageSet]:
    train = load_images(args.dataset, args.data_root, train=True)
    test = load_images(args.dataset, args.data_root, train=False)
    if args.subset is not None:  # the same images whatever --seed: seeds compare training alone
        train, test = train.sample(args.subset), test.sample(args.subset)
    return train, test


def apply_defaults(args, per_dataset: dict[str, dict]) -> None:
    """Fill the options left unset with the example's defaults for the dataset."""
    defaults = per_dataset["digits" if args.dataset == "digits" else "images"]
    for key, value in defaults.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)


def run(
    args,
    per_dataset: dict[str, dict],
    make_model: Callable[[str, int], SSLNet],
    make_objective: Callable[[int, int], torch.nn.Module],
) -> dict:
    """Pre-train, monitor, write the outputs; returns the JSON summary. Under ``torchrun``
    every process trains its shard of each global batch (``--batch-size`` is the global
    batch) and rank 0 alone prints and writes."""
    apply_defaults(args, per_dataset)
    device = init_from_env(args.device)
    try:
        return _run(args, device, make_model, make_objective)
    finally:
        shutdown()


def _run(args, device: torch.device, make_model, make_objective) -> dict:
    train, test = load_split(args)
    config = PretrainConfig(
        epochs=args.epochs,
        batch_size=min(args.batch_size, len(train)),
        lr=args.lr,
        weight_decay=args.weight_decay,
        optimizer=args.optimizer,
        warmup_epochs=min(10, max(1, args.epochs // 10)),
        seed=args.seed,
        compile=args.compile,
        knn_k=KNN_K.get(args.dataset, 200),
    )
    torch.manual_seed(args.seed)
    model = make_model(args.arch, train.images.size(1))
    objective = make_objective(len(train), model.out_dim)
    trainer = Pretrainer(
        model,
        objective,
        train,
        test,
        augment_for(args.dataset, train.images),
        config,
        device,
        args.out,
    )
    if args.resume:
        if not args.out or not (Path(args.out) / "checkpoint.pt").exists():
            raise SystemExit("--resume needs --out with a checkpoint.pt in it")
        trainer.load_checkpoint(Path(args.out) / "checkpoint.pt")
    history = trainer.fit(progress=not args.no_progress)
    seconds = history.epoch_seconds[1:] or history.epoch_seconds  # first epoch: warm-up costs
    summary = {
        "knn_accuracy": history.knn_accuracy[-1],  # the last epoch, never the best
        "epochs": args.epochs,
        "epoch_seconds": sum(seconds) / len(seconds),
        "images_per_second": 2
        * trainer.steps_per_epoch
        * config.batch_size
        * len(seconds)
        / sum(seconds),
        "device": trainer.device_name,
        "dataset": args.dataset,
        "arch": args.arch,
        "final_loss": history.losses[-1],
        "knn_k": config.knn_k,
        "knn_history": history.knn_accuracy,
        "processes": trainer.world,
    }
    if not trainer.main:
        return summary
    if args.out:
        trainer.write_log(Path(args.out) / "log.json")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "knn_history"}))
    return summary
