"""``cl2gnn simclr`` in one process and under ``torchrun`` with several, the same
global batch and seeds: the last epoch's kNN accuracy and the seconds per epoch of each.

    python -m benchmarks.speed.simclr_processes --procs 2 --seeds 0 1 2

The processes draw their own augmentations (one generator per rank), so a run with P
processes is not the one-process run repeated: the comparison is over seeds. Extra
arguments after ``--`` go to both runs (e.g. ``-- --distributed ring``); the runs use the CPU
(gloo) unless they say ``--device cuda`` (NCCL: one GPU per process).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._shared.results import save_table
from cl2gnn.cli import cmdline


def run_example(procs: int, seed: int, extra: list[str], folder: Path) -> dict:
    out = folder / f"p{procs}-s{seed}.json"
    # the CPU (gloo) unless extra says otherwise: NCCL needs a GPU for every process
    example = ["-m", "cl2gnn", "simclr", "--seed", str(seed), "--json", str(out), "--no-progress"]
    example += ["--device", "cpu", *extra]
    if procs == 1:
        command = [sys.executable, *example]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={procs}"]
        command += example
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=cmdline.int_range(2, 64), default=2)
    parser.add_argument("--seeds", type=cmdline.seed, nargs="+", default=[0, 1, 2])
    parser.add_argument("--name", default="simclr_processes", help="results file name")
    parser.add_argument("extra", nargs="*", help="arguments for cl2gnn simclr (after --)")
    args = parser.parse_args()
    rows, accuracy = [], {}
    with cmdline.user_errors(parser.prog), tempfile.TemporaryDirectory() as folder:
        for procs in (1, args.procs):
            runs = [run_example(procs, seed, args.extra, Path(folder)) for seed in args.seeds]
            accuracy[procs] = [r["knn_accuracy"] for r in runs]
            seconds = statistics.mean(r["epoch_seconds"] for r in runs)
            mean, spread = statistics.mean(accuracy[procs]), statistics.pstdev(accuracy[procs])
            print(f"{procs} process(es): kNN {mean:.4f} ± {spread:.4f}, {seconds:.2f} s/epoch")
            rows.append(
                [
                    procs,
                    len(runs),
                    f"{mean:.4f} ± {spread:.4f}",
                    round(seconds, 2),
                    runs[0]["epochs"],
                ]
            )
    difference = statistics.mean(accuracy[args.procs]) - statistics.mean(accuracy[1])
    print(f"difference of the means: {difference:+.4f}")
    save_table(
        args.name,
        "Image SSL",
        f"SimCLR on digits, 1 process against {args.procs} (torchrun, gloo)",
        ["processes", "seeds", "kNN accuracy (last epoch)", "s/epoch", "epochs"],
        rows,
        notes=(
            f"cl2gnn simclr's defaults (ConvNet, global batch 256), seeds {args.seeds}; "
            f"difference of the mean kNN accuracies: {difference:+.4f}. The processes share "
            "the machine's cores."
        ),
    )


if __name__ == "__main__":
    main()
