"""A long benchmark that resumes where it stopped: each measurement, once finished, is one
line of a JSON-lines journal (``{"key": [...], "value": {...}}``), and a run measures only
the keys the journal lacks. Stopping a run (Ctrl-C, a time limit, a crash) loses at most the
measurement under way; the same command started again carries on.

    journal = Journal("runs/sweep.jsonl")
    journal.run((key, lambda: measure(key)) for key in keys)
    table = [journal[key] for key in keys if key in journal]
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

Key = tuple


class Journal:
    """The finished measurements of ``path``, keyed; ``ValueError`` naming the file and line
    for a line that is not a journal entry (the last line alone may be cut short: it was
    being written when the run stopped, and is measured again)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._values: dict[str, dict] = {}
        self._whole = 0  # bytes of whole lines: a line cut short after them is dropped
        text = self.path.read_text() if self.path.exists() else ""
        lines = text.splitlines(keepends=True)
        for number, line in enumerate(lines, 1):
            try:
                entry = json.loads(line)
                key, value = entry["key"], entry["value"]
            except (ValueError, TypeError, KeyError) as error:
                if number == len(lines):
                    break  # cut short by the stop
                raise ValueError(f"{self.path}: line {number} is not a journal entry") from error
            self._values[json.dumps(key)] = value
            self._whole += len(line.encode())

    def __contains__(self, key: Key) -> bool:
        return json.dumps(list(key)) in self._values

    def __getitem__(self, key: Key) -> dict:
        return self._values[json.dumps(list(key))]

    def __len__(self) -> int:
        return len(self._values)

    def values(self) -> list[dict]:
        return list(self._values.values())

    def items(self) -> list[tuple[Key, dict]]:
        return [(tuple(json.loads(key)), value) for key, value in self._values.items()]

    def add(self, key: Key, value: dict) -> None:
        """Record ``value`` under ``key``: one line, flushed to disk before the next one."""
        line = json.dumps({"key": list(key), "value": value})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as file:
            file.truncate(self._whole)  # drop a line cut short
            file.seek(self._whole)
            if self._whole:
                file.seek(self._whole - 1)
                if file.read(1) != b"\n":
                    file.write(b"\n")
            file.write(line.encode() + b"\n")
            file.flush()
            os.fsync(file.fileno())
            self._whole = file.tell()
        self._values[json.dumps(list(key))] = value

    def run(self, tasks: Iterable[tuple[Key, Callable[[], dict]]]) -> int:
        """Measure each task whose key is not in the journal yet, in order; the number
        measured."""
        measured = 0
        for key, measure in tasks:
            if key not in self:
                self.add(key, measure())
                measured += 1
        return measured
