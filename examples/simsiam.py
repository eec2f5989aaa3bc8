"""SimSiam, optionally with multi-stage (JK-mean) targets from cl2gnn's MultiStageMemory
(--multistage S: the last S epochs, after --warmup-stages epochs).

    python examples/simsiam.py                         # digits, CPU, about 15 s
    python examples/simsiam.py --dataset cifar10 --epochs 200 --multistage 2 --out runs/simsiam
    torchrun --nproc_per_node=2 examples/simsiam.py   # 2 processes, global batch norm
"""

from __future__ import annotations

from cl2gnn.nn import MultiStageMemory
from cl2gnn.vision.experiment import common_parser, run
from cl2gnn.vision.models import SSLNet
from cl2gnn.vision.objectives import SimSiamObjective

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


def main(argv=None) -> dict:
    parser = common_parser(__doc__.split("\n\n")[0], {})
    parser.add_argument("--multistage", type=int, default=0, metavar="S")
    parser.add_argument("--warmup-stages", type=int, help="default: a quarter of the epochs")
    parser.add_argument("--memory-dtype", choices=("float32", "bfloat16"), default="float32")
    args = parser.parse_args(argv)

    def make_model(arch: str, channels: int) -> SSLNet:
        dims = (512, 512) if arch == "convnet" else (2048, 2048)
        return SSLNet(arch, channels, proj_dims=dims, predictor_hidden=dims[-1] // 4, simsiam=True)

    def make_objective(num_samples: int, dim: int) -> SimSiamObjective:
        if not args.multistage:
            return SimSiamObjective()
        import torch

        warmup = args.warmup_stages if args.warmup_stages is not None else args.epochs // 4
        memory = MultiStageMemory(
            num_samples,
            dim,
            stages=args.multistage,
            warmup=warmup,
            dtype=getattr(torch, args.memory_dtype),
        )
        return SimSiamObjective(memory)

    return run(args, PER_DATASET, make_model, make_objective)


if __name__ == "__main__":
    main()
