"""The ``cl2gnn`` command."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from cl2gnn import _files
from cl2gnn._torchrun import MODES, launched_by_torchrun
from cl2gnn.datasets.names import DATASETS, EMBEDDED, PRESETS

from . import cmdline, run_folder
from ..studies.names import STUDY_NAMES


def _info(_: argparse.Namespace) -> int:
    import torch
    import torch_geometric

    from cl2gnn.graphs import faiss_has_gpu
    from cl2gnn.graphs._faiss import faiss_problem

    try:
        import torch_scatter  # noqa: F401

        scatter = "installed"
    except ImportError:
        scatter = "not installed (PyG's own scatter is used)"
    rows = {
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else "not available",
        "faiss": "available" if faiss_problem() is None else f"unusable: {faiss_problem()}",
        "faiss GPU": "yes" if faiss_has_gpu() else "no",
        "torch_scatter": scatter,
    }
    for key, value in rows.items():
        print(f"{key:16s} {value}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from .verify import run_checks

    results = run_checks(args.device, args.nodes, args.dim, args.seed)
    width = max(len(name) for name, _ in results)
    print(f"{'check':{width}s}  max |error| (float64, {args.device})")
    for name, error in results:
        print(f"{name:{width}s}  {error:.2e}")
    worst = max(error for _, error in results)
    ok = worst < args.tol
    print(f"{'PASS' if ok else 'FAIL'}: worst error {worst:.2e} (tolerance {args.tol:.0e})")
    if args.json:
        _files.write_text_atomic(
            args.json, json.dumps({"device": args.device, "checks": dict(results)})
        )
    return 0 if ok else 1


# cl2gnn node's options that set a NodeConfig field: option dest -> (field, how the text
# is read); the field's own check (cl2gnn.node.config) decides what is allowed
NODE_FIELDS = {
    "lr": ("learning_rate", float),
    "weight_decay": ("weight_decay", float),
    "temperature": ("temperature", float),
    "epochs": ("epochs", int),
    "lr_warmup": ("lr_warmup", int),
    "layers": ("layers", int),
    "out_channels": ("out_channels", int),
    "neighbor_weight": ("neighbor_weight", float),
    "clusters": ("clusters", int),
    "num_keys": ("num_keys", int),
    "batch_size": ("batch_size", int),
    "matmul_dtype": ("matmul_dtype", str),
}
VIEW_FIELDS = {"drop_edge": "--drop-edge", "drop_feature": "--drop-feature"}


def _node(args: argparse.Namespace) -> int:
    fields = {NODE_FIELDS[dest][0]: getattr(args, dest) for dest in NODE_FIELDS}
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
    with _files.locked_folder(args.save, subfolders=run_folder.owns) as folder:
        if not args.resume:  # continuing the earlier run is what --resume asks for
            run_folder.check_no_earlier_run(folder, args.overwrite)
        with _files.replaced_as_a_whole(folder, run_folder.owns, run_folder.RESULT) as staging:
            status = _run_node(args, fields, staging, folder)
        # finished and in place: an interrupted run's periodic checkpoints are done with
        shutil.rmtree(Path(folder) / run_folder.CHECKPOINTS, ignore_errors=True)
        return status


def _run_node(
    args: argparse.Namespace, fields: dict, save: Path | None, folder: Path | None = None
) -> int:
    from ..node.evaluation.experiment import format_table, run_node

    results = run_node(
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
        config=args.config,
        save=save,
        auto_budget=args.auto_budget,
        resume=args.resume,
        checkpoint_every=args.checkpoint_every,
        run_folder=folder,
        **fields,
    )
    if results:  # under torchrun, rank 0 alone reports
        print(format_table(results))
        if args.json:
            _files.write_text_atomic(args.json, json.dumps(results[0], indent=2))
        if save is not None:
            _files.write_text_atomic(save / run_folder.RESULT, json.dumps(results, indent=2))
    return 0


def _embed(args: argparse.Namespace) -> int:
    import torch

    from cl2gnn.datasets import load_node_dataset
    from cl2gnn.node.result import embed, load_encoder, read_checkpoint

    encoder = load_encoder(args.checkpoint, args.device)
    data = load_node_dataset(args.dataset, args.root)
    width = read_checkpoint(args.checkpoint)["spec"]["in_channels"]
    if data.num_features != width:
        raise ValueError(
            f"{data.name} has {data.num_features} features per node, the encoder in "
            f"{args.checkpoint} reads {width}"
        )
    out = embed(encoder, data.x, data.edge_index, data.get("edge_weight"))
    with _files.atomic_path(args.out) as path:
        torch.save(out, path)
    print(f"{args.out}: embeddings of {data.name}, {out.size(0):,} nodes x {out.size(1)}")
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
    # one fan-out per layer: here where the depth is given; else the method's configuration
    # knows it (DGI's and MVGRL's are one layer deep), and the run refuses before training
    layers = args.layers or (args.config or {}).get("layers")
    if args.num_neighbors is not None and layers and len(args.num_neighbors) != layers:
        parser.error(
            f"--num-neighbors needs one fan-out per layer ({layers}), got {args.num_neighbors}"
        )
    from cl2gnn.node.names import AUTO

    for option, value in (("--resume", args.resume), ("--checkpoint-every", args.checkpoint_every)):
        if value and args.save is None:
            parser.error(f"{option} needs --save DIR (the run's folder)")
        if value and args.method == AUTO:
            parser.error(f"{option}: give --method (auto would choose again)")
        if value and launched_by_torchrun():
            parser.error(f"{option}: a run of one process only (not under torchrun)")
    if args.batch_size is None:
        for option, value in (
            ("--num-neighbors", args.num_neighbors),
            ("--distributed", args.distributed),
        ):
            if value is not None:
                parser.error(f"{option} needs --batch-size (mini-batch training)")
        if launched_by_torchrun():
            parser.error("under torchrun, cl2gnn node needs --batch-size (mini-batch training)")


def _simulate(args: argparse.Namespace) -> int:
    from ..studies import STUDIES, run_study

    if args.list:
        print("\n".join(STUDIES))
        return 0
    names = list(STUDIES) if args.study == "all" else [args.study]
    with _files.locked_folder(args.out):  # one live run; a killed one's staging cleared
        for name in names:
            result = run_study(name, args.out, args.steps, args.seed)
            print(f"{name}: " + json.dumps(result.metrics))
            print("  wrote " + ", ".join([*result.figures, str(Path(args.out) / f"{name}.json")]))
    return 0


def _generate(args: argparse.Namespace) -> int:
    import time

    from cl2gnn.datasets import contextual_sbm, write_npz

    start = time.perf_counter()
    data = contextual_sbm(**PRESETS[args.preset], seed=args.seed)
    generated = time.perf_counter()
    write_npz(data, args.out)
    print(
        f"{args.out}: {data.num_nodes:,} nodes, {data.num_edges // 2:,} undirected edges, "
        f"{data.num_features} features; generated in {generated - start:.1f} s, "
        f"written in {time.perf_counter() - generated:.1f} s"
    )
    return 0


# the image pre-training commands parse their own options (cl2gnn.cli.simclr, .simsiam)
# and start their own process group under torchrun
PRETRAIN = {
    "simclr": "SimCLR with cl2gnn's objectives on images (digits on the CPU by default)",
    "simsiam": "SimSiam, optionally with multi-stage targets, on images",
}


def build_parser() -> argparse.ArgumentParser:
    from cl2gnn.node.names import AUTO, EMBEDDINGS, ENCODERS, METHOD_CHOICES, PROTOCOLS

    parser = cmdline.ArgumentParser(
        prog="cl2gnn",
        description="Contrastive learning as message passing.",
        epilog=f"{cmdline.DEBUG_VARIABLE}=1 shows the traceback behind an error.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="versions and available backends")
    info.set_defaults(func=_info)
    verify = sub.add_parser(
        "verify", help="check forward == x - step * grad(energy) for every operator"
    )
    verify.add_argument("--device", type=cmdline.device, default="cpu")
    # pairs of views, and a quarter of the nodes as sampled keys: 4 at least; the float64
    # references are dense (N x N), so 4096 at most
    verify.add_argument("--nodes", type=cmdline.int_range(4, 4096), default=64)
    verify.add_argument("--dim", type=cmdline.int_range(1, 4096), default=16)
    verify.add_argument("--seed", type=cmdline.seed, default=0)
    verify.add_argument("--tol", type=cmdline.float_range(0.0, 1.0, above=True), default=1e-10)
    verify.add_argument(
        "--json", type=cmdline.output_file, help="write the errors to this JSON file"
    )
    verify.set_defaults(func=_verify)

    node = sub.add_parser(
        "node",
        help="node-level contrastive learning + logistic-regression evaluation",
        description="Train a GRACE-style encoder with a cl2gnn objective for several seeds "
        "and report the frozen embeddings' probe score (accuracy, or ROC-AUC for two "
        "classes; percent, mean ± std over the seeds).",
    )
    node.add_argument(
        "--dataset",
        type=cmdline.dataset_argument,
        default=EMBEDDED,
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
        choices=METHOD_CHOICES,
        default=AUTO,
        help="auto (the default): the candidate with the best validation score on the graph "
        "(its published configuration, if any, and cl2gnn.node.config.CANDIDATES), chosen "
        "on the first seeds' validation nodes; or a method with its configuration",
    )
    node.add_argument(
        "--auto-budget",
        type=cmdline.seconds,
        metavar="SECONDS",
        help="with auto: start no further candidate after this long (default: no limit)",
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
        type=cmdline.config_file,
        metavar="FILE",
        help="a JSON or YAML file of NodeConfig fields, over the dataset's configuration "
        "(the options below override it)",
    )

    def field(dest: str) -> dict:
        name, parse = NODE_FIELDS[dest]
        return {"type": cmdline.config_field(name, parse), "dest": dest}

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
            type=cmdline.config_field(name, float),
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
        **field("matmul_dtype"),
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
        type=cmdline.run_folder(run_folder.owns),
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
        help="continue the run saved in --save DIR: each seed from DIR/seed_<k>/checkpoint.pt "
        "(a seed without one trains from the start); the method and options must be the "
        "saved run's, --epochs may be larger",
    )
    node.add_argument(
        "--checkpoint-every",
        type=cmdline.positive_int,
        metavar="N",
        default=0,
        help="with --save: write each seed's state to DIR/seed_<k>/checkpoint.pt every N "
        "epochs, so that an interrupted run continues with --resume",
    )
    node.add_argument("--no-progress", action="store_true")
    node.set_defaults(func=_node, check=_check_node)

    embed = sub.add_parser(
        "embed",
        help="embed a graph with an encoder saved by cl2gnn node --save",
        description="Write the embeddings of a graph, computed by a saved encoder (a "
        "DIR/seed_<k> folder of cl2gnn node --save), as a float tensor [N, d] (torch.save).",
    )
    embed.add_argument(
        "--checkpoint", required=True, type=cmdline.existing_path, help="DIR/seed_<k>"
    )
    embed.add_argument(
        "--dataset",
        type=cmdline.dataset_argument,
        default=EMBEDDED,
        help=f"one of {', '.join(DATASETS)}, or PATH.npz (the encoder's feature width)",
    )
    embed.add_argument("--root", type=cmdline.existing_path, help="dataset root")
    embed.add_argument("--out", required=True, type=cmdline.output_file, help="FILE.pt")
    embed.add_argument("--device", type=cmdline.device, default="cpu")
    embed.set_defaults(func=_embed)

    simulate = sub.add_parser(
        "simulate",
        help="run a synthetic study of the learning dynamics (figures + JSON)",
    )
    which = simulate.add_mutually_exclusive_group(required=True)
    which.add_argument("study", nargs="?", choices=(*STUDY_NAMES, "all"), help="a study, or all")
    which.add_argument("--list", action="store_true", help="print the study names")
    simulate.add_argument("--out", type=cmdline.output_dir, default="runs/simulate")
    simulate.add_argument(
        "--steps", type=cmdline.int_range(1, 100_000), help="override the study's default"
    )
    simulate.add_argument("--seed", type=cmdline.seed, default=0)
    simulate.set_defaults(func=_simulate)

    generate = sub.add_parser(
        "generate",
        help="write a contextual SBM graph of an OGB graph's size as a .npz file",
        description="Generate a degree-corrected contextual SBM graph of an OGB graph's size "
        "as a .npz file for cl2gnn node --dataset PATH.npz.",
    )
    generate.add_argument("--preset", required=True, choices=sorted(PRESETS))
    generate.add_argument("--out", required=True, type=cmdline.output_file, help="the .npz file")
    generate.add_argument("--seed", type=cmdline.seed, default=0)
    generate.set_defaults(func=_generate)

    for name, summary in PRETRAIN.items():
        command = sub.add_parser(name, help=summary, add_help=False)
        command.add_argument("options", nargs=argparse.REMAINDER)
    for command in sub.choices.values():  # whose options check_paths reads
        command.set_defaults(command_parser=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    cmdline.quiet_pyg_warning()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in PRETRAIN:  # the command parses its own options
        import importlib

        importlib.import_module(f".{argv[0]}", __package__).main(argv[1:], f"cl2gnn {argv[0]}")
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    cmdline.check_paths(args.command_parser, args)
    if hasattr(args, "check"):
        args.check(parser, args)
    with cmdline.user_errors(f"{parser.prog} {args.command}"):
        if hasattr(args, "device"):  # before any data work
            cmdline.check_device(args.device)
        if not launched_by_torchrun():
            return args.func(args)
        from cl2gnn.distributed import init_from_env, shutdown

        args.device = str(init_from_env(args.device))
        try:
            return args.func(args)
        finally:
            shutdown()


def keep_freed_blocks() -> None:
    """Keep freed blocks of up to 32 MiB (glibc's largest threshold) in the process's heap.
    By default glibc hands such blocks back to the kernel on ``free`` and every training step
    page-faults its activations in again (on the embedded default, 13% of the wall time).
    A no-op without glibc."""
    if platform.libc_ver()[0] != "glibc":
        return
    libc = ctypes.CDLL(None)
    libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: serve blocks up to 32 MiB from the heap
    libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: do not shrink the heap after each step


def run() -> NoReturn:
    """The ``cl2gnn`` command (the console script, ``python -m cl2gnn``): :func:`main`, then
    exit with its status. A process that left a torchrun process group exits with
    ``os._exit`` once its output is flushed: the interpreter's teardown after
    ``destroy_process_group`` aborts a few percent of such processes (SIGABRT after the
    work is done, see :func:`cl2gnn.distributed.launch.group_ended`), which a scheduler
    counts as a failed job; nothing that teardown would do is needed here (the outputs are
    written through whole-file replaces, the process group is gone)."""
    keep_freed_blocks()
    try:
        status = main()
    except SystemExit as exit_:
        status = exit_.code
    launch = sys.modules.get("cl2gnn.distributed.launch")  # loaded only if a group started
    if launch is None or not launch.group_ended():
        sys.exit(status)
    if isinstance(status, str):
        sys.stderr.write(status + "\n")
    code = status if isinstance(status, int) else (0 if status is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
