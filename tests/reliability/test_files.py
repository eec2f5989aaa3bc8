"""Issue 64's findings ("files under attack", ``_cases_files.py``), one test per case, each in
a forked child with its memory capped: the case fails unless it is clean."""

import pytest

from . import _cases_files
from ._registry import cases_of, in_child


@pytest.mark.parametrize(
    "run",
    [pytest.param(run, id=f"{category}: {name}") for category, name, run in cases_of(_cases_files)],
)
def test_a_finding_of_issue_64_stays_fixed(run):
    assert in_child(run) == "clean"
