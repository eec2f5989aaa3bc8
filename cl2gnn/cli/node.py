"""The ``cl2gnn node`` command: its options, the checks of their combinations, and the
printing of what the experiment (:func:`~cl2gnn.node.evaluation.experiment.run_experiment`)
returns; parsing and printing only."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from cl2gnn import _files
from cl2gnn._torchrun import MODES

from ..node.config import EMBEDDINGS, ENCODERS
from . import cmdline, node_arguments, run_folder
from .catalogue import AUTO, DATASETS, EMBEDDED_DATASET, MATMUL_DTYPES, PROTOCOLS, dataset_name
from .node_output import announce, format_table, reproduce

# cl2gnn node's options that set a NodeConfig field: option dest -> (field, how the text
# is read); the field's own check (cl2gnn.node.config) decides what is allowed
NODE_FIELDS = {
    "lr": ("learning_rate", float),
    "weight_decay": ("weight_decay", float),
    "epochs": ("epochs", int),
    "lr_warmup": ("lr_warmup", int),
    "layers": ("layers", int),
    "out_channels": ("out_channels", int),
    "batch_size": ("batch_size", int),
}
# the options that set a method's option: dest -> (option, the text's check); the method
# checks them again with its own (cl2gnn.node.methods), and refuses one it does not have
# the methods' options the command sets, each checked by the methods' own checks
METHOD_OPTIONS = {"temperature": float, "neighbor_weight": float, "clusters": int, "num_keys": int}
VIEW_FIELDS = {"drop_edge": "--drop-edge", "drop_feature": "--drop-feature"}
QUICK_SEEDS = 3  # --quick: a first look, under a minute on the embedded default


def _rules(args: argparse.Namespace) -> None:
    """What goes with what among the options (the library's rules,
    :mod:`cl2gnn.node.training.plan`): refused before a process group starts or a folder is
    locked or written."""
    from ..node.config import NodeConfig
    from ..node.training.plan import check_minibatch_fields, check_schedule

    world = int(os.environ.get("WORLD_SIZE", "1"))
    batching = {"batch_size": args.batch_size, "num_neighbors": args.num_neighbors}
    if args.distributed is not None:
        batching["distributed"] = args.distributed
    check_minibatch_fields(NodeConfig(**batching), world)
    check_schedule(
        None,
        auto=args.method == AUTO and not args.quick,
        select_epoch=args.select_epoch,
        resume=args.resume,
        checkpoint_every=args.checkpoint_every,
        folder=args.save is not None,
        world=world,
    )


def _node(args: argparse.Namespace) -> int:
    if args.quick:  # a first look: the graph's default method, a few seeds, the baselines
        from ..node.api import default_method

        graph = dataset_name(args.dataset)
        args.method = default_method(graph) if args.method == AUTO else args.method
        args.seeds = args.seeds or QUICK_SEEDS
        args.baselines = True
    fields = {NODE_FIELDS[dest][0]: getattr(args, dest) for dest in NODE_FIELDS}
    fields |= {name: getattr(args, name) for name in (*METHOD_OPTIONS, "matmul_dtype")}
    fields |= {name: getattr(args, name) for name in VIEW_FIELDS}
    fields |= {
        "encoder": args.encoder,
        "embedding": args.embedding,
        "normalize_features": args.normalize_features,
        "num_neighbors": args.num_neighbors,
        "distributed": args.distributed,
    }
    # rank 0 writes the saved runs: it owns the folder (a second live run is refused), and
    # writes the run into a staging folder that replaces an earlier run (--overwrite) whole
    if args.save is None or int(os.environ.get("RANK", "0")) != 0:
        return _run_node(args, fields, None)
    with _files.locked_folder(args.save, subfolders=run_folder.is_run_entry) as folder:
        run_folder.check_before_run(folder, args.overwrite, args.resume)
        with _files.replaced_as_a_whole(
            folder, run_folder.is_run_entry, run_folder.RESULT
        ) as staging:
            status = _run_node(args, fields, staging, folder)
        # finished and in place: an interrupted run's periodic checkpoints are done with
        shutil.rmtree(Path(folder) / run_folder.CHECKPOINTS, ignore_errors=True)
        return status


def _run_node(
    args: argparse.Namespace, fields: dict, save: Path | None, folder: Path | None = None
) -> int:
    from ..node.evaluation.experiment import run_experiment

    results = run_experiment(
        args.dataset,
        args.method,
        (args.protocol,) if args.protocol else None,
        args.seeds,
        args.root,
        args.device,
        progress=not args.no_progress,
        baselines=args.baselines,
        first_seed=args.seed,
        probe_timeout=args.probe_timeout,
        config={**(args.config or {}), **dict(args.set or ())} or None,
        save=save,
        auto_budget=args.auto_budget,
        select_epoch=args.select_epoch,
        resume=args.resume,
        checkpoint_every=args.checkpoint_every,
        run_folder=folder,
        **fields,
    )
    if results:  # under torchrun, rank 0 alone reports
        if "chosen" in results[0] or results[0].get("chosen_epoch") is not None:
            for result in results:
                result["reproduce"] = reproduce(args.dataset, result)
        print(format_table(results))
        if args.json:
            _files.write_text_atomic(args.json, cmdline.json_text(results[0]))
        if save is not None:
            _files.write_text_atomic(save / run_folder.RESULT, cmdline.json_text(results))
    return 0


def fan_out(text: str) -> int:
    """An argparse type: a sampling fan-out, an integer >= 1 or -1 (all neighbors)."""
    value = cmdline.int_range(-1)(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be an integer >= 1, or -1 for all, got 0")
    return value


def _check_node(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The option combinations no single option's type sees."""
    for name, option in VIEW_FIELDS.items():
        value = getattr(args, name)
        if value is not None:  # each read as a field, (p, p): one per view
            value = [p for p, _ in value]
            if len(value) > 2:
                parser.error(f"{option} takes one probability (both views) or two, got {value}")
            setattr(args, name, tuple(value) if len(value) == 2 else value[0])
    if args.overwrite and args.save is None:
        parser.error(
            "argument --overwrite: needs --save (the folder whose earlier run it replaces)"
        )
    # what goes with what is the library's (cl2gnn.node.training.plan), refused in one line
    # before any training; here the command's own options alone


def add_node_command(sub) -> None:
    """The ``node`` subcommand's parser, on the ``cl2gnn`` command's subparsers ``sub``."""
    node = sub.add_parser(
        "node",
        help="node-level contrastive learning + logistic-regression evaluation",
        description="Train a node encoder self-supervised for several seeds (by default "
        "method auto: the candidate that scores best on the graph's validation nodes; "
        "--quick for a first look) and report the frozen embeddings' probe score "
        "(accuracy, or ROC-AUC for two classes; percent, mean ± std over the seeds).",
    )
    node.add_argument(
        "--dataset",
        type=node_arguments.dataset_argument,
        default=EMBEDDED_DATASET,
        help=f"one of {', '.join(DATASETS)}, or PATH.npz (a graph in the heterophilous "
        "graphs' format: node_features, node_labels, edges, train/val/test_masks)",
    )
    node.add_argument(
        "--root",
        type=cmdline.existing_path,
        help="dataset root (default: $CL2GNN_DATA/<family>, else download)",
    )
    node.add_argument(
        "--method",
        default=AUTO,
        metavar="NAME",
        help="auto (the default): the candidate with the best validation score on the graph "
        "(its published configuration, if any, and cl2gnn.node.presets.CANDIDATES), chosen "
        "on the first seeds' validation nodes; or a registered method (cl2gnn info lists "
        "them) with its configuration",
    )
    node.add_argument(
        "--quick",
        action="store_true",
        help=f"a first look (under a minute on the embedded default): the graph's default "
        f"method instead of auto's candidates, {QUICK_SEEDS} seeds (unless --method, "
        "--seeds), the baselines beside it; without --quick, the full run",
    )
    node.add_argument(
        "--auto-budget",
        type=cmdline.seconds,
        metavar="SECONDS",
        help="with auto: start no further candidate after this long (default: no limit)",
    )
    node.add_argument(
        "--select-epoch",
        action="store_true",
        help="with --method: take each seed's model at the checkpoint (0, 1/8, 1/4, 1/2 or all "
        "of the epochs) with the best validation score on the first seeds, as auto does "
        "(auto always does); epoch 0 is the untrained encoder",
    )
    node.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        help="default: splits where the dataset ships splits (its own train/val/test "
        "masks, one seed per split), else grace",
    )
    node.add_argument(
        "--seeds",
        type=cmdline.int_range(1, 10_000),
        help="how many seeds, from --seed on (default: one per shipped split under the splits "
        "protocol, else 10)",
    )
    node.add_argument(
        "--seed",
        type=cmdline.seed,
        default=0,
        help="the first seed: the run trains seeds SEED … SEED + SEEDS - 1 (default: 0)",
    )
    node.add_argument(
        "--config",
        type=node_arguments.config_file,
        metavar="FILE",
        help="a JSON or YAML file of NodeConfig fields, over the dataset's configuration "
        "(the options below override it)",
    )
    node.add_argument(
        "--set",
        type=node_arguments.config_setting,
        action="append",
        metavar="NAME=VALUE",
        help="set one NodeConfig field or method option (VALUE read as JSON, else as text: "
        "--set ema_decay=0.999 --set encoder=sage), over --config; repeatable",
    )

    def field(dest: str) -> dict:
        if dest in METHOD_OPTIONS:
            return {"type": node_arguments.method_option(dest, METHOD_OPTIONS[dest]), "dest": dest}
        name, parse = NODE_FIELDS[dest]
        return {"type": node_arguments.config_field(name, parse), "dest": dest}

    node.add_argument("--epochs", **field("epochs"), help="override the dataset's default")
    node.add_argument("--lr", **field("lr"), help="learning rate (default: the dataset's)")
    node.add_argument(
        "--lr-warmup",
        **field("lr_warmup"),
        metavar="EPOCHS",
        help="the learning rate's linear warm-up, at most --epochs (default: the method's)",
    )
    node.add_argument("--weight-decay", **field("weight_decay"), help="default: the dataset's")
    node.add_argument(
        "--temperature",
        **field("temperature"),
        help="the losses' temperature (default: the dataset's)",
    )
    for name, option in VIEW_FIELDS.items():
        what = "dropping an edge" if name == "drop_edge" else "masking a feature column"
        node.add_argument(
            option,
            type=node_arguments.config_field(name, float),
            nargs="+",
            metavar="P",
            help=f"the probability of {what}: P for both views, or P1 P2 (default: the dataset's)",
        )
    node.add_argument("--encoder", choices=ENCODERS, help="default: the dataset's")
    node.add_argument("--layers", **field("layers"), help="graph convolutions (default: 2)")
    node.add_argument(
        "--out-channels",
        **field("out_channels"),
        help="the encoder's last layer's width, and the projection head's; the other layers "
        "keep their ratio to it (default: the dataset's)",
    )
    node.add_argument(
        "--embedding",
        choices=EMBEDDINGS,
        help="what the probe reads: the last layer, both layers side by side (concat), or "
        "every layer with the input features, each unit-normalised (layers); default: the "
        "dataset's",
    )
    node.add_argument(
        "--matmul-dtype",
        choices=MATMUL_DTYPES,
        help="the exact InfoNCE's products in bfloat16 on the CPU (float32 accumulation; "
        "faster where the CPU has bfloat16 units, not exact; default: float32)",
    )
    node.add_argument(
        "--baselines",
        action="store_true",
        help="also score, on the same splits, the probe on the raw features and the "
        "encoder at its random initialisation",
    )
    node.add_argument(
        "--neighbor-weight",
        **field("neighbor_weight"),
        help="weight of graph-neighbor positives, methods 'neighbors' and 'homophily' (default: 1)",
    )
    node.add_argument(
        "--clusters",
        **field("clusters"),
        help="k-means centroids that decide which neighbors stay positive, method "
        "'homophily' (default: 10)",
    )
    features = node.add_mutually_exclusive_group()
    features.add_argument(
        "--normalize-features",
        action="store_true",
        default=None,
        help="row-normalise the features, as the GRACE/GCA code does",
    )
    features.add_argument(
        "--raw-features",
        dest="normalize_features",
        action="store_false",
        help="feed the features as they are (default: the dataset's choice)",
    )
    node.add_argument(
        "--num-keys",
        **field("num_keys"),
        help="InfoNCE's uniformity term over this many views drawn per step "
        "(faster, approximate; default: the dataset's)",
    )
    node.add_argument(
        "--batch-size",
        **field("batch_size"),
        help="train on mini-batches of this many seed nodes (over all processes under "
        "torchrun) and their sampled neighborhoods; default: the whole graph per step",
    )
    node.add_argument(
        "--num-neighbors",
        type=fan_out,
        nargs="+",
        metavar="K",
        help="with --batch-size: in-neighbors sampled per node at each hop, one per layer, "
        "-1 for all (default: 10 per layer)",
    )
    node.add_argument(
        "--distributed",
        choices=MODES,
        help="under torchrun: the negatives of every process, all-gathered (gather, the "
        "default) or passed rank to rank (ring)",
    )
    node.add_argument(
        "--probe-timeout",
        type=cmdline.seconds,
        metavar="SECONDS",
        help="under torchrun: how long the other processes wait for rank 0's probe of each "
        "seed (default: $CL2GNN_WAIT_TIMEOUT, else 14400)",
    )
    node.add_argument("--device", type=cmdline.device, default="cpu")
    node.add_argument("--json", type=cmdline.output_file, help="write the result to this JSON file")
    node.add_argument(
        "--save",
        type=cmdline.run_folder(run_folder.is_run_entry),
        metavar="DIR",
        help="write each seed's trained encoder, embeddings and losses to DIR/seed_<k>/ "
        "(encoder.pt, embeddings.pt, losses.csv, losses.png) and the result to "
        "DIR/result.json, all once the run has finished; a DIR holding an earlier run is "
        "refused unless --overwrite",
    )
    node.add_argument(
        "--overwrite",
        action="store_true",
        help="with --save: replace the earlier run in DIR (its result.json and seed_<k> "
        "folders, as a whole, once this run has finished; DIR's other files stay)",
    )
    node.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --save DIR: each seed from its checkpoint, an interrupted "
        f"run's DIR/{run_folder.CHECKPOINTS}/seed_<k>/checkpoint.pt, else a finished run's "
        "DIR/seed_<k>/checkpoint.pt (a seed without one trains from the start; the output "
        "and result.json say where each seed resumed); the method and options must be the "
        "saved run's, --epochs may be larger",
    )
    node.add_argument(
        "--checkpoint-every",
        type=cmdline.positive_int,
        metavar="N",
        default=0,
        help=f"with --save: write each seed's state to DIR/{run_folder.CHECKPOINTS}/seed_<k>/"
        "checkpoint.pt every N epochs, so that an interrupted run continues with --resume "
        "(the folder goes once the run has finished)",
    )
    node.add_argument("--no-progress", action="store_true")
    node.set_defaults(func=_node, check=_check_node, announce=announce, rules=_rules)
