"""The seed papers' synthetic studies, each run with the library's own operators and losses.

``cl2gnn simulate <study>`` runs one and writes its PNG figures and a JSON of its metrics.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from pathlib import Path

import torch

from .. import _validation
from . import (
    message_passing,
    neural_kernel,
    new_designs,
    proposition2,
    proposition3,
    spectral_clustering,
)
from .common import StudyResult

STUDIES = {
    module.NAME: module
    for module in (
        message_passing,
        proposition2,
        proposition3,
        spectral_clustering,
        neural_kernel,
        new_designs,
    )
}


@contextmanager
def _small_problem_mode():
    """Hundreds of points: one thread beats two (thread hand-off costs more than the math)
    and value checks are skipped inside the loops."""
    threads, checks = torch.get_num_threads(), _validation._ENABLED
    torch.set_num_threads(1)
    _validation.set_validation(False)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        _validation.set_validation(checks)


def run_study(
    name: str, out: str | Path, steps: int | None = None, seed: int = 0, **size
) -> StudyResult:
    """Run one study, write ``<out>/<name>*.png`` and ``<out>/<name>.json``."""
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; choose from {', '.join(STUDIES)}")
    module = STUDIES[name]
    kwargs = dict(size)
    if steps is not None:
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        kwargs["steps"] = steps
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with _small_problem_mode():
        result = module.run(out, seed=seed, **kwargs)
    result.metrics["steps"] = kwargs.get(
        "steps", inspect.signature(module.run).parameters["steps"].default
    )
    result.metrics["seed"] = seed
    result.save(out)
    return result


__all__ = ["STUDIES", "StudyResult", "run_study"]
