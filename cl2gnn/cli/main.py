"""The ``cl2gnn`` command: its subcommands' parsers and what each runs (the node command's in
:mod:`.node`, the image commands' in :mod:`.pretrain`); parsing and printing only."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import sys
from pathlib import Path
from typing import NoReturn

from cl2gnn import _files
from cl2gnn._torchrun import launched_by_torchrun

from . import cmdline, node_arguments
from .catalogue import DATASETS, EMBEDDED_DATASET, GRAPH_PRESETS, STUDY_NAMES
from .node import add_node_command


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
            args.json, cmdline.json_text({"device": args.device, "checks": dict(results)}, None)
        )
    return 0 if ok else 1


def _embed(args: argparse.Namespace) -> int:
    from cl2gnn.datasets import load_node_dataset
    from cl2gnn.node.inputs import check_finite_embeddings
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
    check_finite_embeddings(out, f"the embeddings of {data.name}")
    with _files.atomic_path(args.out) as path:
        _files.save_torch(out, path)
    print(f"{args.out}: embeddings of {data.name}, {out.size(0):,} nodes x {out.size(1)}")
    return 0


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

    from cl2gnn.datasets import PRESETS, contextual_sbm, write_npz

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

    add_node_command(sub)

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
        type=node_arguments.dataset_argument,
        default=EMBEDDED_DATASET,
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
    generate.add_argument("--preset", required=True, choices=GRAPH_PRESETS)
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
        if hasattr(args, "announce"):  # the first line, before torch loads for the rules
            args.announce(args)
        if hasattr(args, "rules"):  # the library's, on the options: before a process group
            args.rules(args)
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
