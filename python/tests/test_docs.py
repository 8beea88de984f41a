"""The guide's first example runs as written, with only the wheel installed."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import repository


def first_example(guide: str) -> str:
    """The first Python block of the guide at ``guide`` (relative to the repository)."""
    text = (repository() / guide).read_text()
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


@pytest.mark.parametrize("guide", ["docs/python.md", "README.md", "python/README.md"])
def test_the_first_example_runs_as_written(guide, tmp_path):
    """Oracle: the example's own printed count, against the work it names (256 fresh pages
    written: at least one fault each)."""
    out = subprocess.run([sys.executable, "-c", first_example(guide)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    faults = re.search(r"(\d+) page faults", out.stdout)
    assert faults and int(faults.group(1)) >= 256, out.stdout
