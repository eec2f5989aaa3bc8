"""The first command's clock: the first line is stamped when it is printed, not when the
command ends."""

import sys

import pytest

from ._scripts import load

first_command = load("first_command")


def test_the_first_line_is_timed_when_it_appears_not_at_the_end(tmp_path):
    code = "import time; print('first', flush=True); time.sleep(1.0); print('last')"
    first, total, lines = first_command.timed([sys.executable, "-c", code], tmp_path)
    assert lines == ["first", "last"]
    assert first < 0.9 < total  # the sleep lies between the two


def test_a_failing_command_is_refused_naming_its_last_line(tmp_path):
    code = "import sys; print('broken'); sys.exit(3)"
    with pytest.raises(ValueError, match="failed: broken"):
        first_command.timed([sys.executable, "-c", code], tmp_path)
