"""What "fails like a tool" means, shared by the commands' tests (tests/cli/) and the
benchmark scripts' (tests/benchmarks/): ``prog: error: ...`` on one stderr line naming the
option, exit status 2, no traceback; and, for argument errors, no heavy module imported."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY_MODULES = ("torch", "torch_geometric", "torchvision", "faiss", "matplotlib", "sklearn")


def assert_one_line_naming(code, stderr, prog, named):
    lines = stderr.splitlines()
    assert code == 2, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"{prog}: error: ") and named in lines[0], lines[0]
    assert "Traceback" not in stderr


def run_in_process(script, args, monkeypatch):
    """``python script args`` (a path ending in .py) or ``cl2gnn command args``, in this
    process (the script's or the package's __main__): its exit status."""
    script = str(script)
    argv = [script] if script.endswith(".py") else script.split()
    monkeypatch.setattr(sys, "argv", [*argv, *args])
    with pytest.raises(SystemExit) as exit_info:
        if script.endswith(".py"):
            runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_module("cl2gnn", run_name="__main__")
    return exit_info.value.code


def heavy_imports(cases, cwd: Path, prelude: str = "", root: Path | None = None) -> list[str]:
    """The cases among ``[(script or command, args), ...]`` that import a heavy module,
    run one after the other in a fresh interpreter where the heavy modules are blocked, so
    that a case whose check is missing fails at its first heavy import (naming the case)
    instead of starting a run. ``prelude`` is code run first (what resolves a script's
    helpers); ``root``: a folder whose packages the scripts import (the repository's, for
    ``benchmarks``), as ``python -m`` from it would find them."""
    code = (
        "import json, runpy, sys\n"
        f"{prelude}\n"
        f"sys.modules.update(dict.fromkeys({HEAVY_MODULES!r}))  # import raises ImportError\n"
        "imported = []\n"
        f"for script, args in {[(str(s), a) for s, a in cases]!r}:\n"
        "    sys.argv = [script, *args] if script.endswith('.py') else [*script.split(), *args]\n"
        "    try:\n"
        "        if script.endswith('.py'):\n"
        "            runpy.run_path(script, run_name='__main__')\n"
        "        else:\n"
        "            runpy.run_module('cl2gnn', run_name='__main__')\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    except ImportError as error:\n"
        "        imported.append(f'{script} {args}: {error}')\n"
        "print(json.dumps(imported))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)} if root else None
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, check=True, env=env
    )
    return json.loads(result.stdout.splitlines()[-1])
