"""``benchmarks/speed/gpu.sh``, the one GPU run, rehearsed on the CPU (``DRY=1``): every part
runs under its own time limit and ends as a row of one table, a ratio or a line saying what
was skipped and why; a part the budget cannot fit is not started; a missing output folder is
a usage error. The GPU's own numbers need a GPU (a session that draws one)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from ._scripts import ROOT, load

PARTS = ("cora", "loss", "knn", "profile", "simclr")


def gpu_sh(out: Path, timeout: int, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "benchmarks/speed/gpu.sh", str(out)],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rows_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "ratios.jsonl").read_text().splitlines()]


def test_the_dry_rehearsal_runs_every_part_into_one_table(tmp_path):
    done = gpu_sh(tmp_path, 900, DRY="1", GRACE_CODE="")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = rows_of(tmp_path)
    assert {row["part"] for row in rows} == set(PARTS)
    failed = [row for row in rows if "stopped" in row.get("skipped", "")]
    failed += [row for row in rows if "failed" in row.get("skipped", "")]
    assert not failed  # every part ran to its end within its limit
    by_measure = {row["measure"]: row for row in rows}
    dense = next(row for measure, row in by_measure.items() if "dense" in measure)
    knn = next(row for row in rows if row["part"] == "knn")
    assert dense["ratio"] > 0 and knn["ratio"] > 0 and "1.0000 exact rows" in knn["ours"]
    assert all("no GRACE checkout" in row["skipped"] for row in rows if row["part"] == "cora")
    table = (tmp_path / "table.md").read_text().splitlines()
    assert table[0] == "| part | measure | cl2gnn | peer | ratio | goal |"
    assert len(table) == 2 + len(rows)  # one line per row: ratios and skips alike


def test_a_part_the_budget_cannot_fit_is_a_line_not_a_start(tmp_path):
    done = gpu_sh(tmp_path, 120, DRY="1", BUDGET="1")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = rows_of(tmp_path)
    assert [row["part"] for row in rows] == list(PARTS)
    assert all("not started" in row["skipped"] for row in rows)
    assert not list(tmp_path.glob("*.log"))  # nothing ran


def test_gpu_sh_without_an_output_folder_is_a_usage_error():
    done = subprocess.run(
        ["bash", "benchmarks/speed/gpu.sh"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.startswith("gpu.sh: error: usage:")


@pytest.mark.parametrize(
    ("intervals", "seconds", "share"),
    [
        ([(0, 1_000_000)], 2.0, 0.5),
        ([(0, 600_000), (400_000, 1_000_000)], 1.0, 1.0),  # overlapping kernels count once
        ([(0, 100_000), (500_000, 600_000)], 1.0, 0.2),
    ],
)
def test_the_busy_share_is_the_union_of_the_kernels_intervals(intervals, seconds, share):
    gpu_ratios = load("gpu_ratios")

    class Kernel:
        def __init__(self, start, end):
            self.time_range = type("Range", (), {"start": start, "end": end})

    kernels = [Kernel(start, end) for start, end in intervals]
    assert gpu_ratios.busy_share(kernels, seconds) == pytest.approx(share)
