"""What the benchmarks on generated graphs of OGB size share (``large_*.py``): the graphs,
each phase's wall time and peak RSS, the probe's split, the configuration from the command
line, and the JSON lines the measuring processes append and the tables read.

The graphs come from :func:`cl2gnn.datasets.contextual_sbm` (presets ``arxiv``: 169,343
nodes, 1,166,243 undirected edges, 128-d, 40 classes; ``products``: 2,449,029 nodes,
61,859,140 edges, 100-d, 47 classes), generated in each measuring process (so that its peak
memory is its own; about the graph's own size).
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from benchmarks._shared.results import rss_mb
from cl2gnn.cli import cmdline

PRESETS = ("arxiv", "products")


class PhaseMeter:
    """Each phase's wall time and peak RSS above ``base``: RSS is sampled every 10 ms by a
    thread, because ``ru_maxrss`` keeps the process's peak so far, not a phase's own (a
    spike shorter than the interval can be missed)."""

    def __init__(self, base_mb: float) -> None:
        self.base, self.phases, self._peak = base_mb, {}, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self._peak = max(self._peak, rss_mb())

    @contextmanager
    def phase(self, name: str):
        self._peak = rss_mb()
        start = time.perf_counter()
        yield
        seconds = time.perf_counter() - start
        peak = max(self._peak, rss_mb())
        self.phases[name] = {"s": seconds, "peak_rss_above_import_mb": peak - self.base}

    def close(self) -> dict:
        self._stop.set()
        self._thread.join()
        return self.phases


def generate(preset: str, nodes: int | None = None):
    """The preset's graph, its edges sorted by target (the neighbor sampler then reads them
    in place: no CSC copy); with ``nodes``, that many nodes at the preset's mean degree. The
    generator's freed heap goes back to the system (glibc's ``malloc_trim``), so that the
    RSS measured afterwards is the graph's and not the generator's leftovers."""
    import ctypes

    from cl2gnn.datasets import PRESETS as SIZES
    from cl2gnn.datasets import contextual_sbm

    size = dict(SIZES[preset])
    if nodes is not None:
        size["num_edges"] = round(size["num_edges"] * nodes / size["num_nodes"])
        size["num_nodes"] = nodes
    data = contextual_sbm(**size, seed=0).sort(sort_by_row=False)
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return data


def probe_split(data, cap: int) -> list:
    """The generator's train, validation and test nodes, at most ``cap`` of each drawn at
    random (the probe's time bounded)."""
    import torch

    split = []
    for seed, mask in enumerate((data.train_mask, data.val_mask, data.test_mask)):
        nodes = mask.nonzero().view(-1)
        pick = torch.randperm(nodes.numel(), generator=torch.Generator().manual_seed(seed))
        split.append(nodes[pick[:cap]])
    return split


def config_from(args):
    from cl2gnn.node import NodeConfig

    changes = dict(
        out_channels=args.hidden,  # the option keeps its name: the recorded commands use it
        proj_hidden=args.hidden,
        encoder=args.encoder,
        epochs=args.epochs,
        learning_rate=args.lr,
        num_keys=args.num_keys,
        matmul_dtype=args.matmul_dtype,
    )
    if args.mode == "minibatch":
        changes |= dict(batch_size=args.batch_size, num_neighbors=tuple(args.num_neighbors))
    return NodeConfig().with_overrides(**changes)


def csc_copy_note(records: list) -> str:
    """The sentence naming the runs whose graph was not sorted by target (empty if none):
    their sampler held a CSC copy, which their peak RSS includes."""
    copied = [r for r in records if not r.get("csc_in_place")]
    if not copied:
        return ""
    return (
        f" {len(copied)} of the {len(records)} runs sampled a graph not sorted by target; "
        "their sampler held a CSC copy (its edges and their permutation, 16 bytes per edge)."
    )


def training_arguments(parser, out: str) -> None:
    """The options of a measuring run that trains: the graph, the configuration, ``--out``."""
    parser.add_argument("--preset", choices=PRESETS, required=True)
    parser.add_argument("--nodes", type=cmdline.positive_int, help="at the preset's mean degree")
    parser.add_argument("--mode", choices=("full", "minibatch"), default="minibatch")
    parser.add_argument("--epochs", type=cmdline.positive_int, default=1)
    parser.add_argument("--batch-size", type=cmdline.positive_int, default=1024)
    parser.add_argument("--num-neighbors", type=cmdline.int_range(-1), nargs=2, default=[10, 10])
    parser.add_argument(
        "--hidden",
        type=cmdline.positive_int,
        default=128,
        help="the encoder's output width (NodeConfig.out_channels) and the head's",
    )
    parser.add_argument("--encoder", choices=("gcn", "sage"), default="gcn")
    parser.add_argument("--lr", type=cmdline.positive_float, default=1e-3)
    parser.add_argument("--num-keys", type=cmdline.positive_int)
    parser.add_argument(
        "--matmul-dtype", choices=("bfloat16",), help="the exact loss's CPU tiles in bfloat16"
    )
    parser.add_argument("--probe-nodes", type=cmdline.positive_int, default=20_000)
    parser.add_argument("--out", type=cmdline.output_file, default=out)


def append_record(out: str, record: dict) -> None:
    """Print one measurement and append it to the JSON lines of ``out``."""
    print(json.dumps(record))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as file:
        file.write(json.dumps(record) + "\n")


def read_records(out: str) -> list[dict]:
    return [json.loads(line) for line in Path(out).read_text().splitlines() if line.strip()]


def main(description: str, measure, table, out: str, arguments) -> int:
    """A script's command line: ``run`` (``arguments(parser)`` adds its options) appends
    ``measure(args)``'s record to ``--out`` (nothing on ranks other than 0); ``table``
    writes the tables from ``--out``."""
    parser = cmdline.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    arguments(sub.add_parser("run"))
    sub.add_parser("table").add_argument("--out", type=cmdline.existing_path, default=out)
    args = parser.parse_args()
    with cmdline.user_errors(parser.prog):
        if args.command == "table":
            table(read_records(args.out))
        elif record := measure(args):
            append_record(args.out, record)
    return 0
