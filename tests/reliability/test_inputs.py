"""An adversarial user's inputs (``_cases_inputs.py``), one test per case, each in a
forked child with its memory capped: the case fails unless it is clean."""

import pytest

from . import _cases_inputs
from ._registry import cases_of, in_child


@pytest.mark.parametrize(
    "run",
    [
        pytest.param(run, id=f"{category}: {name}")
        for category, name, run in cases_of(_cases_inputs)
    ],
)
def test_an_adversarial_input_is_refused_or_right(run):
    assert in_child(run) == "clean"
