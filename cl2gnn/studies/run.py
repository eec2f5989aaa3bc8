"""Running a study: small-problem settings, and its files written all together or not at all."""

from __future__ import annotations

import importlib
import inspect
import os
from contextlib import contextmanager
from pathlib import Path

import torch

from cl2gnn import _files, _validation

from .common import StudyResult

# study ``name`` lives in module ``name.replace("-", "_")``
STUDY_NAMES = (
    "message-passing",
    "proposition2",
    "proposition3",
    "spectral-clustering",
    "neural-kernel",
    "new-designs",
    "oversmoothing",
)


STUDIES = {
    name: importlib.import_module(f".{name.replace('-', '_')}", __package__) for name in STUDY_NAMES
}


@contextmanager
def _small_problem_mode():
    """Hundreds of points: one thread beats two (thread hand-off costs more than the math)
    and value checks are skipped inside the loops."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with _validation.without_value_checks():
            yield
    finally:
        torch.set_num_threads(threads)


def run_study(
    name: str, out: str | Path, steps: int | None = None, seed: int = 0, **size
) -> StudyResult:
    """Run one study, write ``<out>/<name>*.png`` and ``<out>/<name>.json``.

    The study draws into a hidden folder inside ``out`` (the library's staging name, which
    the next locked run of ``out`` clears if this one is killed: ``cl2gnn simulate`` holds
    :func:`~cl2gnn._files.locked_folder`); its files move into ``out`` only once it has
    finished (figures first, the JSON last), so a failed or interrupted study leaves no
    figure or JSON behind."""
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; choose from {', '.join(STUDIES)}")
    module = STUDIES[name]
    kwargs = dict(size)
    if steps is not None:
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        kwargs["steps"] = steps
    out = Path(out)
    with _files.staging_folder(out, name) as staging:
        with _small_problem_mode():
            result = module.run(staging, seed=seed, **kwargs)
        result.metrics["steps"] = kwargs.get(
            "steps", inspect.signature(module.run).parameters["steps"].default
        )
        result.metrics["seed"] = seed
        drawn = [Path(figure) for figure in result.figures]
        for file in [*drawn, result.save(staging)]:
            os.replace(file, out / file.name)
        result.figures = [str(out / figure.name) for figure in drawn]
    return result
