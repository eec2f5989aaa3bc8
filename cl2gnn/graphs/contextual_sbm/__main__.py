"""``python -m cl2gnn.graphs.contextual_sbm --preset NAME --out PATH.npz [--seed S]``: a
contextual SBM graph of an OGB graph's size, written for ``cl2gnn node --dataset PATH.npz``."""

from __future__ import annotations

import sys
import time

from ... import _cli
from . import PRESETS, contextual_sbm, write_npz


def main(argv: list[str] | None = None) -> int:
    """``python -m cl2gnn.graphs.contextual_sbm --preset NAME --out PATH.npz [--seed S]``."""
    parser = _cli.ArgumentParser(
        prog="cl2gnn.graphs.contextual_sbm",
        description="Generate a contextual SBM graph of an OGB graph's size as a .npz file "
        "for cl2gnn node --dataset PATH.npz.",
    )
    parser.add_argument("--preset", required=True, choices=sorted(PRESETS))
    parser.add_argument("--out", required=True, type=_cli.output_file, help="the .npz file")
    parser.add_argument("--seed", type=_cli.seed, default=0)
    args = parser.parse_args(argv)
    with _cli.user_errors(parser.prog):
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


if __name__ == "__main__":
    sys.exit(main())
