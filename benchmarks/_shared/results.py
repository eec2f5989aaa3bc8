"""One format for every benchmark's results, read by ``benchmarks.results_page`` to write
``RESULTS.md`` and the topics' pages: ``benchmarks/results/<name>.json`` holds one table with
the command that printed it, the machine and the date, and, where the table keeps rows of
earlier runs (:func:`earlier_rows`), each of those runs' command and machine."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from cl2gnn.cli import cmdline

ROOT = Path(__file__).resolve().parents[2]  # the repository
RESULTS_DIR = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Topic:
    question: str  # the title of its page and its row of the summary
    page: str  # its page: results/<page>.md


# a table's topic, in the summary's order
TOPICS = {
    "Node classification": Topic("Accuracy per graph and method", "accuracy"),
    "Reproduction": Topic("Reproduction against the authors' code", "reproduction"),
    "Speed": Topic("Speed against the peers", "speed"),
    "Scale": Topic("Memory at scale", "scale"),
    "Image SSL": Topic("Image SSL", "image-ssl"),
    "Operators": Topic("The operator contract", "operators"),
}


def module_of(script: str | Path) -> str:
    """The module a benchmark script runs as (``benchmarks/speed/knn_build.py``:
    ``benchmarks.speed.knn_build``). Every script starts as ``python -m <module>`` from the
    repository, so that its imports of ``benchmarks._shared`` need no change to ``sys.path``."""
    return ".".join(Path(script).resolve().relative_to(ROOT).with_suffix("").parts)


def rss_mb() -> float:
    """This process's current resident memory in MiB (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def cpu_model() -> str:
    """The CPU's model name and its vector extensions that matter for torch."""
    name, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                name = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    vector = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
    return f"{name} ({', '.join(vector) or 'no AVX2'})"


def machine(device: str = "cpu") -> str:
    """Where a number was measured: the GPU's name on CUDA, else the CPU model and cores;
    torch's version either way."""
    import torch

    if str(device).startswith("cuda"):
        where = torch.cuda.get_device_name(torch.device(device))
    else:
        where = f"{cpu_model()}, {os.cpu_count()} cores"
    return f"{where}, torch {torch.__version__}"


def save_table(
    name: str,
    topic: str,
    title: str,
    columns: list[str],
    rows: list[list],
    *,
    device: str = "cpu",
    notes: str = "",
    command: str | None = None,
    config: dict | None = None,
) -> Path:
    """Write one table to ``results/<name>.json`` (a re-run replaces it). ``command``
    defaults to this process's own command line; ``config`` (the configurations the rows
    ran, JSON) is kept beside the table rather than written into its notes. Rows that an
    earlier run measured (labelled by :func:`earlier_rows`) keep that run's command and
    machine in the field ``earlier`` (:func:`earlier_runs`)."""
    if not cmdline.FILE_STEM.fullmatch(name):
        raise ValueError(f"name must be a plain file stem (letters, digits, _ . -), got {name!r}")
    if topic not in TOPICS:
        raise ValueError(f"topic must be one of {tuple(TOPICS)}, got {topic!r}")
    if any(len(row) != len(columns) for row in rows):
        raise ValueError("every row needs one cell per column")
    if command is None:
        command = shlex.join(["python", "-m", module_of(sys.argv[0]), *sys.argv[1:]])
    earlier = earlier_runs(name, rows)
    record = {
        "topic": topic,
        "title": title,
        "command": command,
        "machine": machine(device),
        "date": datetime.date.today().isoformat(),
        "columns": columns,
        "rows": rows,
        "notes": notes,
    }
    if earlier:
        record["earlier"] = earlier
    if config is not None:
        record["config"] = config
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")  # no NaN cells
    tmp.replace(path)
    return path


MEASURED = " (measured "  # a kept row's first cell: "<label> (measured <date>)"


def measured_on(row: list) -> str | None:
    """The date an earlier run measured ``row`` on (its first cell's label), else None."""
    label = row[0] if row and isinstance(row[0], str) else ""
    return label.partition(MEASURED)[2].rstrip(")") or None


def earlier_runs(name: str, rows: list[list]) -> dict[str, dict]:
    """Date -> the command and machine of each earlier run whose rows ``rows`` keep, read
    from the table ``results/<name>.json`` they were kept from, so that the page shows each
    run's rows apart, under its own command. ``ValueError`` for a date no run of that table
    is known by, or for rows of two runs of one date, which the labels cannot tell apart."""
    dates = sorted({date for row in rows if (date := measured_on(row))})
    if not dates:
        return {}
    table = saved_table(name) or {}
    runs = dict(table.get("earlier", {}))
    if table:
        own = {"command": table["command"], "machine": table["machine"]}
        if runs.setdefault(table["date"], own) != own and table["date"] in dates:
            raise ValueError(
                f"{name}: rows of two runs of {table['date']} cannot be told apart; "
                "re-run the rows of one of them"
            )
    unknown = [date for date in dates if date not in runs]
    if unknown:
        raise ValueError(f"{name}: rows measured on {', '.join(unknown)} by no known run")
    return {date: runs[date] for date in dates}


def saved_table(name: str) -> dict | None:
    """The table ``results/<name>.json`` (None where there is none)."""
    path = RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def earlier_rows(name: str, columns: list[str] | None = None) -> dict[str, list]:
    """The rows ``results/<name>.json`` holds, by their first cell's name (up to " ("), that
    cell labelled with the date the row was measured, for a table that keeps the rows of an
    earlier run whose files are gone; none where the table's first columns are not
    ``columns``."""
    table = saved_table(name)
    if table is None:
        return {}
    if columns is not None and table["columns"][: len(columns)] != columns:
        return {}
    rows = {}
    for row in table["rows"]:
        label, _, date = row[0].partition(MEASURED)
        date = date.rstrip(")") or table["date"]
        rows[label.split(" (")[0]] = [f"{label}{MEASURED}{date})", *row[1:]]
    return rows
