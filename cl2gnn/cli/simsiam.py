"""SimSiam, optionally with multi-stage (JK-mean) targets from cl2gnn's MultiStageMemory
(--multistage S: the last S epochs, after --warmup-stages epochs).

    cl2gnn simsiam                         # digits, CPU, about 15 s
    cl2gnn simsiam --dataset cifar10 --epochs 200 --multistage 2 --out runs/simsiam
    torchrun --nproc_per_node=2 -m cl2gnn simsiam   # 2 processes, global batch norm
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from . import cmdline  # torch-free: torch loads once the options are checked
from .pretrain import MAX_EPOCHS, common_parser, parse_args, pretrain_main

MAX_STAGES = 100  # the memory holds every training image's features once per stage

PER_DATASET = {
    "digits": {"arch": "convnet", "epochs": 20, "batch_size": 256, "lr": 0.4, "weight_decay": 5e-4},
    "images": {
        "arch": "resnet18",
        "epochs": 200,
        "batch_size": 512,
        "lr": 0.06,
        "weight_decay": 5e-4,
    },
}


def stages(text: str) -> int:
    """An argparse type: 0 (no memory) or 2 … :data:`MAX_STAGES` stages — one stage is the
    current features alone, plain SimSiam."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not (value == 0 or 2 <= value <= MAX_STAGES):
        raise argparse.ArgumentTypeError(
            f"must be 0 (off) or an integer in [2, {MAX_STAGES}] (one stage is the current "
            f"epoch alone: plain SimSiam), got {text!r}"
        )
    return value


def parse(
    argv: Sequence[str] | None = None, prog: str | None = None
) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The checked options (an error exits with one line, status 2, before torch loads)."""
    parser = common_parser(__doc__.split("\n\n")[0], prog=prog)
    parser.add_argument("--multistage", type=stages, default=0, metavar="S")
    parser.add_argument(
        "--warmup-stages",
        type=cmdline.int_range(0, MAX_EPOCHS),
        help="epochs before the memory is used (default: a quarter of the epochs)",
    )
    parser.add_argument("--memory-dtype", choices=("float32", "bfloat16"), default="float32")
    args = parse_args(parser, argv, PER_DATASET)
    if args.warmup_stages is not None:
        if not args.multistage:
            parser.error("argument --warmup-stages: needs --multistage")
        if args.warmup_stages >= args.epochs:
            parser.error(
                f"argument --warmup-stages: must be below --epochs ({args.epochs}), or the "
                f"memory is never used, got {args.warmup_stages}"
            )
    return parser, args


def builders(args: argparse.Namespace) -> tuple[Callable, Callable]:
    """``(make_model, make_objective)`` for ``args``; torch loads here."""
    import torch

    from cl2gnn.nn import MultiStageMemory
    from cl2gnn.vision.models import SSLNet
    from cl2gnn.vision.objectives import SimSiamObjective

    def make_model(arch: str, channels: int) -> SSLNet:
        dims = (512, 512) if arch == "convnet" else (2048, 2048)
        return SSLNet(arch, channels, proj_dims=dims, predictor_hidden=dims[-1] // 4, simsiam=True)

    def make_objective(num_samples: int, dim: int) -> SimSiamObjective:
        if not args.multistage:
            return SimSiamObjective()
        warmup = args.warmup_stages if args.warmup_stages is not None else args.epochs // 4
        memory = MultiStageMemory(
            num_samples,
            dim,
            stages=args.multistage,
            warmup=warmup,
            dtype=getattr(torch, args.memory_dtype),
        )
        return SimSiamObjective(memory)

    return make_model, make_objective


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> dict:
    return pretrain_main(parse, PER_DATASET, builders, argv, prog)
