"""A group read from Python costs about what a bare read of its descriptor costs."""

from __future__ import annotations

import subprocess
import sys

from conftest import repository


def test_a_group_read_costs_at_most_one_and_a_half_bare_reads():
    """python/benches/read.py: ``Group.read()`` of 4 events against ``os.read()`` of the
    same group's leader, side by side in one run; the median of 301 rounds' ratios, beside a
    control (the bare read against itself). Oracle: the bare system call from Python
    (``os.read``), which reads the same kernel record."""
    bench = repository() / "python" / "benches" / "read.py"
    out = subprocess.run([sys.executable, str(bench)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    print(out.stdout)
    control = float(out.stdout.split("control (os.read() against itself):")[1].split()[0])
    ratio = float(out.stdout.split("ratio:")[1])
    assert 0.9 <= control <= 1.1, out.stdout
    assert ratio <= 1.5, out.stdout
