"""The benchmark scripts the tests import or run, by name: ONE table of where each lives.

Moving a script means changing its line here and nowhere else
(``test_the_table_holds_every_benchmark_file_and_only_those`` names a file the table
misses). Where ``benchmarks/`` is a package (its scripts run as ``python -m
benchmarks.<folder>.<script>``), a script is imported by its dotted name, as the repository's
root is the tests' import root. Where it is not, its scripts import their helpers by bare
name (``from _results import save_table``), as Python allows a script's neighbours: no test
puts ``benchmarks/`` on ``sys.path`` for that; a finder at the end of ``sys.meta_path``
resolves exactly the names of this table, each from its file
(``importlib.util.spec_from_file_location``), and nothing else."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]

# module name -> path from the repository's root
SCRIPTS = {
    "_floors": "benchmarks/_shared/floors.py",
    "_headlines": "benchmarks/_shared/headlines.py",
    "_large": "benchmarks/_shared/large.py",
    "_node_args": "benchmarks/_shared/node_args.py",
    "_operators": "benchmarks/_shared/operators.py",
    "_paired": "benchmarks/_shared/paired.py",
    "_results": "benchmarks/_shared/results.py",
    "_runner": "benchmarks/_shared/runner.py",
    "depth": "benchmarks/accuracy/depth.py",
    "distributed": "benchmarks/speed/distributed.py",
    "epoch_counts": "benchmarks/speed/epoch_counts.py",
    "epoch_profile": "benchmarks/speed/epoch_profile.py",
    "first_command": "benchmarks/speed/first_command.py",
    "fullgraph_step": "benchmarks/speed/fullgraph_step.py",
    "gca_zero_columns": "benchmarks/decisions/gca_zero_columns.py",
    "gpu_ratios": "benchmarks/speed/gpu_ratios.py",
    "image_ssl": "benchmarks/accuracy/image_ssl.py",
    "infonce_scale": "benchmarks/speed/infonce_scale.py",
    "knn_build": "benchmarks/speed/knn_build.py",
    "large_end_to_end": "benchmarks/speed/large_end_to_end.py",
    "large_inference": "benchmarks/speed/large_inference.py",
    "large_steps": "benchmarks/speed/large_steps.py",
    "large_training": "benchmarks/speed/large_training.py",
    "loss_kernels": "benchmarks/speed/loss_kernels.py",
    "minibatch_cora": "benchmarks/accuracy/minibatch_cora.py",
    "mvgrl_windows": "benchmarks/decisions/mvgrl_windows.py",
    "node_auto": "benchmarks/decisions/node_auto.py",
    "node_classification": "benchmarks/accuracy/node_classification.py",
    "node_epochs": "benchmarks/studies/node_epochs.py",
    "node_readout": "benchmarks/studies/node_readout.py",
    "node_reproduce": "benchmarks/reproduce/node_reproduce.py",
    "polygcl": "benchmarks/reproduce/polygcl.py",
    "side_by_side": "benchmarks/reproduce/side_by_side.py",
    "node_select": "benchmarks/decisions/node_select.py",
    "node_speed_grace": "benchmarks/speed/node_speed_grace.py",
    "node_speed_trees": "benchmarks/speed/node_speed_trees.py",
    "node_sweep": "benchmarks/studies/node_sweep.py",
    "node_transfer": "benchmarks/decisions/node_transfer.py",
    "node_zoo": "benchmarks/reproduce/node_zoo.py",
    "results_page": "benchmarks/results_page.py",
    "simclr_processes": "benchmarks/speed/simclr_processes.py",
}
# the benchmarks' data files the tests read, by name
CONFIGS = {
    "cora_public": "benchmarks/configs/cora_public.json",
    "default_candidates": "benchmarks/configs/default_candidates.json",
}
# the scripts a user runs (the helpers, named _*, are imported by them)
COMMANDS = sorted(name for name in SCRIPTS if not name.startswith("_"))
PACKAGE = (ROOT / "benchmarks" / "__init__.py").is_file()


def path(name: str) -> Path:
    """The absolute path of script ``name`` (or of configuration ``name``)."""
    return ROOT / (SCRIPTS[name] if name in SCRIPTS else CONFIGS[name])


def dotted(name: str) -> str:
    """Script ``name``'s module: ``benchmarks.speed.knn_build`` for its file
    ``benchmarks/speed/knn_build.py``."""
    return SCRIPTS[name].removesuffix(".py").replace("/", ".")


def script_command(name: str) -> str:
    """How the results page's commands start script ``name``."""
    return f"python -m {dotted(name)}" if PACKAGE else f"python {SCRIPTS[name]}"


class _TableFinder(importlib.abc.MetaPathFinder):
    """Resolves the table's top-level names from their files, after every other finder."""

    def find_spec(self, fullname, path=None, target=None):
        if path is None and fullname in SCRIPTS:
            return importlib.util.spec_from_file_location(fullname, ROOT / SCRIPTS[fullname])
        return None


def load(name: str) -> ModuleType:
    """Script ``name`` imported as a module (its ``main`` not run), once per process."""
    if PACKAGE:
        return importlib.import_module(dotted(name))
    if name not in sys.modules or getattr(sys.modules[name], "__file__", None) != str(path(name)):
        spec = importlib.util.spec_from_file_location(name, path(name))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


if not PACKAGE and not any(isinstance(finder, _TableFinder) for finder in sys.meta_path):
    sys.meta_path.append(_TableFinder())
