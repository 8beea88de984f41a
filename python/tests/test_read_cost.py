"""A group read from Python costs about what a bare read of its descriptor costs."""

from __future__ import annotations

import subprocess
import sys

from conftest import repository


def test_a_group_read_costs_at_most_one_and_a_half_bare_reads():
    """python/benches/read.py: ``Group.read()`` of 4 events against ``os.read()`` of the
    same group's leader, side by side in one run; the best round of each. Oracle: the bare
    system call from Python (``os.read``), which reads the same kernel record."""
    bench = repository() / "python" / "benches" / "read.py"
    out = subprocess.run([sys.executable, str(bench), "20000", "15"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    print(out.stdout)
    ratio = float(out.stdout.split("ratio:")[1])
    assert ratio <= 1.5, out.stdout
