"""Issue 54's findings ("results you can trust", ``_cases_trust.py``), one test per case,
each in a forked child with its memory capped: the case fails unless it is clean."""

import pytest

from . import _cases_trust
from ._registry import cases_of, in_child


@pytest.mark.parametrize(
    "run",
    [pytest.param(run, id=f"{category}: {name}") for category, name, run in cases_of(_cases_trust)],
)
def test_a_finding_of_issue_54_stays_fixed(run):
    assert in_child(run) == "clean"
