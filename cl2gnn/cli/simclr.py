"""SimCLR with cl2gnn's objectives: InfoNCE = AlignConv + UniformAttention, or attention
alignment (--attention BETA), Kernel-InfoNCE (--kernel), kNN positives (--nn-positives K).

    cl2gnn simclr                          # digits, CPU, about 15 s
    cl2gnn simclr --dataset cifar10 --epochs 200 --batch-size 512 --out runs/simclr
    torchrun --nproc_per_node=2 -m cl2gnn simclr     # 2 processes, negatives from both
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from cl2gnn._torchrun import MODES

from . import cmdline  # torch-free: torch loads once the options are checked
from .catalogue import KERNELS
from .pretrain import common_parser, parse_args, pretrain_main

PER_DATASET = {
    "digits": {
        "arch": "convnet",
        "epochs": 20,
        "batch_size": 256,
        "lr": 0.3,
        "weight_decay": 5e-4,
        "temperature": 0.2,
    },
    "images": {
        "arch": "resnet18",
        "epochs": 200,
        "batch_size": 512,
        "lr": 0.3,
        "weight_decay": 5e-4,
        "temperature": 0.5,
    },
}


def parse(
    argv: Sequence[str] | None = None, prog: str | None = None
) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The checked options (an error exits with one line, status 2, before torch loads)."""
    # a batch of one image has no negatives: the loss is 0 whatever the encoder
    parser = common_parser(__doc__.split("\n\n")[0], min_batch=2, prog=prog)
    parser.add_argument(
        "--temperature",
        type=cmdline.float_range(0.0, 100.0, above=True),
        help="default: 0.2 digits, 0.5 images",
    )
    parser.add_argument(
        "--attention",
        type=cmdline.float_range(0.0, 100.0),
        metavar="BETA",
        help="attention alignment of sharpness BETA (0: plain InfoNCE)",
    )
    parser.add_argument("--kernel", choices=sorted(KERNELS), help="Kernel-InfoNCE kernel")
    parser.add_argument(
        "--nn-positives",
        type=cmdline.non_negative_int,
        default=0,
        metavar="K",
        help="each view's K nearest views in the batch as extra positives",
    )
    parser.add_argument(
        "--distributed",
        choices=MODES,
        default="gather",
        help="under torchrun, how the negatives of every process's batch are used: "
        "all-gathered keys, or keys passed round the processes (ring: less memory; "
        "not with --nn-positives)",
    )
    args = parse_args(parser, argv, PER_DATASET)
    if (args.attention is not None) + (args.kernel is not None) + (args.nn_positives > 0) > 1:
        parser.error("choose at most one of --attention, --kernel and --nn-positives")
    if args.nn_positives > 0 and args.distributed == "ring":
        parser.error(
            "argument --nn-positives: the neighbors are searched in the global batch "
            "gathered on every process; use --distributed gather (ring mode holds nothing "
            "of the global batch's size)"
        )
    views = 2 * min(args.batch_size, args.subset or args.batch_size)
    if args.nn_positives >= views:
        parser.error(
            f"argument --nn-positives: must be below the {views} views of a batch "
            f"({views // 2} images, two views each), got {args.nn_positives}"
        )
    return parser, args


def builders(args: argparse.Namespace) -> tuple[Callable, Callable]:
    """``(make_model, make_objective)`` for ``args``; torch loads here."""
    from cl2gnn.vision.models import SSLNet
    from cl2gnn.vision.objectives import SimCLRObjective

    def make_model(arch: str, channels: int) -> SSLNet:
        proj = (512, 128) if arch == "convnet" else (2048, 128)
        return SSLNet(arch, channels, proj_dims=proj)

    def make_objective(num_samples: int, dim: int) -> SimCLRObjective:
        return SimCLRObjective(
            args.temperature, args.attention, args.kernel, args.nn_positives, args.distributed
        )

    return make_model, make_objective


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> dict:
    return pretrain_main(parse, PER_DATASET, builders, argv, prog)
