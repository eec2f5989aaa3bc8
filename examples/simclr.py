"""SimCLR with cl2gnn's objectives: InfoNCE = AlignConv + UniformAttention, or attention
alignment (--attention BETA), Kernel-InfoNCE (--kernel), kNN positives (--nn-positives K).

    python examples/simclr.py                          # digits, CPU, about 15 s
    python examples/simclr.py --dataset cifar10 --epochs 200 --batch-size 512 --out runs/simclr
    torchrun --nproc_per_node=2 examples/simclr.py     # 2 processes, negatives from both
"""

from __future__ import annotations

from cl2gnn.distributed import MODES
from cl2gnn.vision.experiment import common_parser, run
from cl2gnn.vision.models import SSLNet
from cl2gnn.vision.objectives import KERNELS, SimCLRObjective

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


def main(argv=None) -> dict:
    parser = common_parser(__doc__.split("\n\n")[0], {})
    parser.add_argument("--temperature", type=float, help="default: 0.2 digits, 0.5 images")
    parser.add_argument("--attention", type=float, metavar="BETA", help="attention alignment")
    parser.add_argument("--kernel", choices=sorted(KERNELS), help="Kernel-InfoNCE kernel")
    parser.add_argument("--nn-positives", type=int, default=0, metavar="K")
    parser.add_argument(
        "--distributed",
        choices=MODES,
        default="gather",
        help="under torchrun, how the negatives of every process's batch are used: "
        "all-gathered keys, or keys passed round the processes (ring: less memory)",
    )
    args = parser.parse_args(argv)

    def make_model(arch: str, channels: int) -> SSLNet:
        proj = (512, 128) if arch == "convnet" else (2048, 128)
        return SSLNet(arch, channels, proj_dims=proj)

    def make_objective(num_samples: int, dim: int) -> SimCLRObjective:
        return SimCLRObjective(
            args.temperature, args.attention, args.kernel, args.nn_positives, args.distributed
        )

    return run(args, PER_DATASET, make_model, make_objective)


if __name__ == "__main__":
    main()
