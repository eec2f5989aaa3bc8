"""The README's first command on a fresh clone: when ``cl2gnn node --quick`` prints its first
line and when it finishes, on the embedded default (and, with ``--full``, the full run,
``cl2gnn node``: method auto's candidates, 10 seeds).

    python -m benchmarks.speed.first_command [--full]   # -> first_command.json

The tree is cloned (``git clone`` of its committed state) into a temporary folder and the
command runs there, its ``PYTHONPATH`` the clone, ``$CL2GNN_DATA`` as given; each line of its
output is stamped with the seconds since the process started."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cl2gnn.cli import cmdline

ROOT = Path(__file__).resolve().parents[2]


def timed(command: list[str], cwd: Path) -> tuple[float, float, list[str]]:
    """``(first line, finished)`` in seconds since ``command`` started in ``cwd``, and its
    lines (progress bars' carriage returns as line ends); ``ValueError`` if it fails."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    first, lines = None, []
    for line in process.stdout:
        if first is None and line.strip():
            first = time.perf_counter() - start
        lines.append(line.rstrip())
    if process.wait():
        raise ValueError(f"{' '.join(command)} failed: {lines[-1] if lines else ''}")
    return first or 0.0, time.perf_counter() - start, lines


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also time the full run")
    args = parser.parse_args()
    from benchmarks._shared.results import save_table

    commands = [["--quick"]] + ([[]] if args.full else [])
    rows = []
    with tempfile.TemporaryDirectory() as folder, cmdline.user_errors(parser.prog):
        clone = Path(folder) / "cl2gnn"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        commit = subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for options in commands:
            command = [sys.executable, "-m", "cl2gnn", "node", *options]
            first, total, lines = timed(command, clone)
            score = next((x for x in lines if x.startswith("digits-knn ")), "")
            shown = " ".join(["cl2gnn node", *options])
            rows.append([shown, commit, f"{first:.1f}", f"{total:.1f}", " ".join(score.split())])
            print(rows[-1], flush=True)
    print(
        save_table(
            "first_command",
            "Speed",
            "The README's first command on a fresh clone: its first line, and its end",
            ["command", "commit", "first line (s)", "finished (s)", "its first row"],
            rows,
            notes="A git clone of the committed tree, the command run there as `python -m "
            "cl2gnn` with PYTHONPATH the clone and CL2GNN_DATA as set (the embedded default "
            "needs no data); the seconds from the process's start to the first line it "
            "printed, and to its exit. Goals (issue 62): the first line within 5 s, the "
            "first command under a minute.",
        )
    )


if __name__ == "__main__":
    main()
