"""Does mini-batch training lose accuracy? GRACE on Cora, full-batch against mini-batch
(the same configuration otherwise), under the GRACE protocol::

    python -m benchmarks.accuracy.minibatch_cora --seeds 10 --batch-size 512   # -> results/
"""

from __future__ import annotations

from benchmarks._shared.results import save_table
from cl2gnn.cli import cmdline


def measure(args) -> None:
    """GRACE on Cora, full-batch against mini-batch, same configuration otherwise."""
    from cl2gnn.node.evaluation.experiment import run_experiment

    fan_out = tuple(args.num_neighbors)
    runs = {
        "full batch": {},
        f"mini-batch {args.batch_size}, fan-out {list(fan_out)}": dict(
            batch_size=args.batch_size, num_neighbors=fan_out
        ),
    }
    rows = []
    for label, changes in runs.items():
        (r,) = run_experiment("Cora", "grace", ("grace",), args.seeds, progress=False, **changes)
        rows.append(
            [
                label,
                len(r["seeds"]),
                f"{r['score_mean']:.2f} ± {r['score_std']:.2f}",
                f"{r['epoch_ms']:.0f}",
            ]
        )
        print(rows[-1], flush=True)
    save_table(
        "node_minibatch_cora",
        "Scale",
        "GRACE on Cora: full-batch against mini-batch (GRACE protocol)",
        ["training", "seeds", "accuracy (%)", "ms / epoch"],
        rows,
        notes="GRACE's Cora configuration for both (200 epochs; a mini-batch epoch is one "
        "pass over the nodes); mini-batch embeddings by layer-wise inference. Target: "
        "mini-batch within 1 point of full-batch.",
    )


def main() -> None:
    parser = cmdline.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=cmdline.positive_int, default=10)
    parser.add_argument("--batch-size", type=cmdline.positive_int, default=512)
    parser.add_argument("--num-neighbors", type=cmdline.int_range(-1), nargs=2, default=[10, 10])
    args = parser.parse_args()
    with cmdline.user_errors(parser.prog):
        measure(args)


if __name__ == "__main__":
    main()
