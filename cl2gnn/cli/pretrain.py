"""The command line and the run shared by ``examples/simclr.py`` and
``examples/simsiam.py``: every option refused while parsing when out of its range, the
example's per-dataset defaults and the checks across options — all before torch is
imported (this module loads it only when the run starts), so that ``--help`` and an
argument error answer at once and nothing is written — then the data, the training and
the outputs (checkpoint, log, JSON), each of which appears only complete."""

from __future__ import annotations

import argparse
import json
import os
import pickle
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from cl2gnn import _files
from cl2gnn._checks import first_line

from . import cmdline
from .catalogue import ARCHS
from .catalogue import IMAGE_DATASETS as DATASETS

if TYPE_CHECKING:
    import torch

    from cl2gnn.vision.augment import MultiViewAugment
    from cl2gnn.vision.data import ImageSet
    from cl2gnn.vision.models import SSLNet
    from cl2gnn.vision.train import Pretrainer

DIGITS_STATS = ((0.31,), (0.40,))  # mean / std of scikit-learn's digits in [0, 1]
RUN_FILES = ("checkpoint.pt", "log.json")  # what a run writes into --out (and replaces)
# the options' bounds: a million epochs, and a batch of 2**20 images (the whole of
# ImageNet-1k's training set fits in 2**21), beyond any run's
MAX_EPOCHS, MAX_BATCH = 10**6, 2**20
# the monitor's k = 200 exceeds a digits class (about 144 training images): k = 20 there
KNN_K = {"digits": 20}


def common_parser(
    description: str, min_batch: int = 1, prog: str | None = None
) -> cmdline.ArgumentParser:
    """The options of both examples; ``min_batch``: the fewest images a batch (and so
    ``--subset``, which caps the batch) may hold."""
    parser = cmdline.ArgumentParser(
        prog=prog,
        description=description,
        epilog=f"{cmdline.DEBUG_VARIABLE}=1 shows the traceback behind an error.",
    )
    parser.add_argument("--dataset", default="digits", choices=DATASETS)
    parser.add_argument(
        "--data-root",
        type=cmdline.existing_path,
        help="dataset folder (default: $CL2GNN_DATA or download)",
    )
    parser.add_argument("--arch", choices=ARCHS, help="default: convnet for digits, else resnet18")
    parser.add_argument("--epochs", type=cmdline.int_range(1, MAX_EPOCHS))
    parser.add_argument(
        "--batch-size",
        type=cmdline.int_range(min_batch, MAX_BATCH),
        help="images per step, over all processes under torchrun",
    )
    parser.add_argument(
        "--lr",
        type=cmdline.float_range(0.0, 10.0, above=True),
        help="base learning rate per 256 images",
    )
    parser.add_argument("--weight-decay", type=cmdline.float_range(0.0, 1.0))
    parser.add_argument("--optimizer", choices=("sgd", "lars"), default="sgd")
    parser.add_argument(
        "--subset",
        type=cmdline.int_range(min_batch),
        help="train (and monitor) on N images drawn at random, the same for every --seed",
    )
    parser.add_argument("--seed", type=cmdline.seed, default=0)
    parser.add_argument(
        "--device", type=cmdline.device, help="default: cuda where available, else cpu"
    )
    parser.add_argument("--compile", action="store_true", help="torch.compile (CUDA only)")
    parser.add_argument(
        "--out",
        type=cmdline.run_folder(RUN_FILES.__contains__),
        help="folder for " + " and ".join(RUN_FILES),
    )
    parser.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt")
    parser.add_argument(
        "--overwrite", action="store_true", help="start afresh in an --out that holds a checkpoint"
    )
    parser.add_argument("--json", type=cmdline.output_file, help="write the result summary here")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def apply_defaults(args: argparse.Namespace, per_dataset: dict[str, dict]) -> None:
    """Fill the options left unset with the example's defaults for the dataset."""
    defaults = per_dataset["digits" if args.dataset == "digits" else "images"]
    for key, value in defaults.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)


def parse_args(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None, per_dataset: dict[str, dict]
) -> argparse.Namespace:
    """Parse ``argv``, fill the dataset's defaults and refuse the combinations no single
    option's type can see (``prog: error: ...``, exit 2)."""
    args = parser.parse_args(argv)
    cmdline.check_paths(parser, args)
    apply_defaults(args, per_dataset)
    if args.dataset == "folder" and args.data_root is None:
        parser.error("--dataset folder needs --data-root")
    if args.resume and args.overwrite:
        parser.error("choose one of --resume and --overwrite")
    try:  # checked again once the run holds the folder: a run may end in it meanwhile
        check_out_folder(args)
    except ValueError as error:
        parser.error(str(error))
    processes = int(os.environ.get("WORLD_SIZE", "1"))  # set by torchrun
    if args.batch_size % processes:
        parser.error(
            f"argument --batch-size: must be a multiple of the {processes} processes "
            f"(each takes an equal share of every batch), got {args.batch_size}"
        )
    return args


def check_out_folder(args: argparse.Namespace) -> None:
    """``ValueError`` unless ``--out`` holds what the run's options ask for: a checkpoint
    with ``--resume``, none of an earlier run otherwise (unless ``--overwrite``)."""
    checkpoint = Path(args.out or ".") / "checkpoint.pt"
    if args.resume and (args.out is None or not checkpoint.is_file()):
        raise ValueError("--resume needs --out with a checkpoint.pt in it")
    if args.out is not None and checkpoint.exists() and not (args.resume or args.overwrite):
        raise ValueError(
            f"argument --out: {args.out!r} holds a checkpoint.pt of an earlier run; "
            "--resume continues it, --overwrite starts afresh, or choose another folder"
        )


# the options a resumed run may change; every other one is the run's identity, kept in its
# checkpoint (cl2gnn.vision.train.check_same_run): the epochs may grow, the outputs and the
# device are where it runs, and the data may have moved
OPTIONS_A_RESUME_MAY_CHANGE = (
    "epochs",
    "resume",
    "overwrite",
    "out",
    "json",
    "no_progress",
    "device",
    "compile",
    "data_root",
)


def run_options(args: argparse.Namespace) -> dict:
    """What identifies the run of ``args``: every option but
    :data:`OPTIONS_A_RESUME_MAY_CHANGE`."""
    return {k: v for k, v in sorted(vars(args).items()) if k not in OPTIONS_A_RESUME_MAY_CHANGE}


def augment_for(dataset: str, images: torch.Tensor) -> MultiViewAugment:
    from cl2gnn.vision.augment import MultiViewAugment

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


def load_split(args: argparse.Namespace) -> tuple[ImageSet, ImageSet]:
    """The training and test images; a dataset file that cannot be read (a truncated zip,
    an image that does not decode) raises ``ValueError`` naming the file (``load_images``)."""
    from cl2gnn.vision.data import load_images

    train = load_images(args.dataset, args.data_root, train=True)
    test = load_images(args.dataset, args.data_root, train=False)
    if args.subset is not None:  # the same images whatever --seed: seeds compare training alone
        train, test = train.sample(args.subset), test.sample(args.subset)
    return train, test


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def pretrain_main(
    parse: Callable[..., tuple[argparse.ArgumentParser, argparse.Namespace]],
    per_dataset: dict[str, dict],
    builders: Callable[[argparse.Namespace], tuple[Callable, Callable]],
    argv: Sequence[str] | None,
    prog: str | None,
) -> dict:
    """A pre-training command's ``main``: parse ``argv`` (torch-free), then :func:`run` with
    the ``(make_model, make_objective)`` that ``builders(args)`` returns; a user's error
    ends in one line."""
    cmdline.quiet_pyg_warning()
    parser, args = parse(argv, prog)
    with cmdline.user_errors(parser.prog):
        make_model, make_objective = builders(args)
        return run(args, per_dataset, make_model, make_objective)


def run(
    args: argparse.Namespace,
    per_dataset: dict[str, dict],
    make_model: Callable[[str, int], SSLNet],
    make_objective: Callable[[int, int], torch.nn.Module],
) -> dict:
    """Pre-train, monitor, write the outputs; returns the JSON summary. Under ``torchrun``
    every process trains its shard of each global batch (``--batch-size`` is the global
    batch) and rank 0 alone prints and writes. A device this machine lacks is refused
    (``ValueError``) before the process group starts."""
    from cl2gnn.distributed import init_from_env, shutdown

    apply_defaults(args, per_dataset)
    args.device = args.device or default_device()
    cmdline.check_device(args.device)
    with ExitStack() as stack:
        if args.out is not None and int(os.environ.get("RANK", "0")) == 0:  # the writer
            stack.enter_context(_files.locked_folder(args.out))
            check_out_folder(args)  # what parsing found may have changed since
        device = init_from_env(args.device)
        try:
            return _run(args, device, make_model, make_objective)
        finally:
            shutdown()


def _run(args, device: torch.device, make_model, make_objective) -> dict:
    import torch

    from cl2gnn.vision.train import PretrainConfig, Pretrainer

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
        identity=run_options(args),
    )
    if args.resume:
        resume(trainer, Path(args.out) / "checkpoint.pt")
    history = trainer.fit(progress=not args.no_progress)
    seconds = history.epoch_seconds[1:] or history.epoch_seconds  # first epoch: warm-up costs
    summary = {
        "knn_accuracy": history.knn_accuracy[-1],  # the last epoch, never the best
        "epochs": trainer.epoch,  # resumed: the checkpoint's epochs and this run's
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
        _files.write_text_atomic(args.json, cmdline.json_text(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "knn_history"}))
    return summary


def resume(trainer: Pretrainer, checkpoint: Path) -> None:
    """Load ``checkpoint`` into ``trainer``; a file torch cannot read (truncated, damaged),
    one written for another model or by another run (:func:`run_options`), or one that
    needs more than tensors and plain values to load (a pickled callable: loading it could
    run code) raises ``ValueError`` naming the file."""
    try:
        trainer.load_checkpoint(checkpoint)
    except ValueError:
        raise  # the checkpoint's own checks, naming it
    except pickle.UnpicklingError as error:
        # torch's weights-only refusal names the global it blocked on a line of its own
        refused = [line.strip() for line in str(error).splitlines() if "GLOBAL" in line]
        if not refused:
            raise ValueError(f"{checkpoint}: cannot resume from it: {first_line(error)}") from None
        raise ValueError(
            f"{checkpoint}: refused: it holds more than tensors and plain values, and loading "
            f"it could run code ({refused[0]})"
        ) from None
    except Exception as error:  # truncated or damaged: torch fails in any of many ways
        raise ValueError(f"{checkpoint}: cannot resume from it: {first_line(error)}") from None
