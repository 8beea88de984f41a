"""What the Python face's tests share: the skip door, the oracles and the workloads.

The skip door is the project's (conformance/src/skip.rs) in Python: a test that cannot run
here calls ``skip(need, reason)``; the skip is logged to the file ``COUNTERHAL_SKIP_LOG``
names, and where ``COUNTERHAL_REQUIRE`` names the need (or ``all``) it fails instead.
python/tests/main.rs runs these tests with the wheel installed in a fresh environment.
"""

from __future__ import annotations

import mmap
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Sequence

import pytest

import counterhal

NEEDS = ("hardware", "system", "tools", "privilege", "platform", "source")

#: The events the differential tests count: exact where the system counts them exactly.
EXACT_EVENTS = "page-faults,syscalls:sys_enter_getpid"


def required(need: str) -> bool:
    """Whether COUNTERHAL_REQUIRE forbids skipping for lack of ``need``."""
    value = os.environ.get("COUNTERHAL_REQUIRE", "")
    parts = [part.strip().lower() for part in value.split(",")]
    return need in parts or "all" in parts


def skip(need: str, reason: str) -> None:
    """Skips the running test for lack of ``need``, through the project's one door."""
    assert need in NEEDS, need
    test = os.environ.get("PYTEST_CURRENT_TEST", "-").split(" ")[0]
    if required(need):
        pytest.fail(f"COUNTERHAL_REQUIRE requires {need}, but {test} would be skipped: {reason}")
    log = os.environ.get("COUNTERHAL_SKIP_LOG")
    if log:
        line = "\t".join([need, f"python::{test}", reason.replace("\n", " ").replace("\t", " ")])
        with open(log, "a", encoding="utf-8") as file:
            file.write(line + "\n")
    pytest.skip(f"{reason} [needs {need}]")


def repository() -> Path:
    """The repository's root (python/tests/ is two levels below it)."""
    return Path(__file__).resolve().parents[2]


def counterhal_command() -> str:
    """The ``counterhal`` command, which python/tests/main.rs names in COUNTERHAL_BIN."""
    command = os.environ.get("COUNTERHAL_BIN")
    if not command or not os.access(command, os.X_OK):
        skip("tools", "the counterhal command is not built (cargo build -p counterhal-cli)")
    return command


def perf_command() -> str:
    """Debian's perf, the oracle of exact counts."""
    perf = shutil.which("perf")
    if perf is None:
        skip("tools", "perf is not installed (Debian: linux-perf)")
    return perf


def tracepoints_here() -> None:
    """Skips unless this process can open the getpid tracepoint (tracefs mounted, readable)."""
    try:
        counterhal.Group("syscalls:sys_enter_getpid").close()
    except counterhal.Error as error:
        skip("system", f"the getpid tracepoint does not open here: {error}")


def fresh_pages(pages: int) -> mmap.mmap:
    """``pages`` new anonymous pages, without transparent huge pages (one fault for 512)."""
    memory = mmap.mmap(-1, max(pages, 1) * mmap.PAGESIZE)
    memory.madvise(mmap.MADV_NOHUGEPAGE)
    return memory


def touch(memory: mmap.mmap, pages: int, first: int = 0) -> None:
    """Writes one byte of each of ``pages`` pages from page ``first``: one fault each, fresh."""
    for at in range(first * mmap.PAGESIZE, (first + pages) * mmap.PAGESIZE, mmap.PAGESIZE):
        memory[at] = 1


def getpids(calls: int) -> None:
    """``calls`` getpid system calls (glibc does not cache the pid)."""
    for _ in range(calls):
        os.getpid()


def stat_counts(stderr: str) -> dict:
    """The counts of ``stat -x,`` (perf's and counterhal's CSV), by event name."""
    counts = {}
    for line in stderr.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[0].isdigit():
            counts[fields[2]] = int(fields[0])
    return counts


def stat(tool: List[str], events: str, command: Sequence[str], **kwargs) -> dict:
    """``TOOL stat -x, -e EVENTS -- COMMAND``'s counts, for perf or the counterhal command."""
    out = subprocess.run(
        [*tool, "stat", "-x,", "-e", events, "--", *command],
        capture_output=True,
        text=True,
        **kwargs,
    )
    assert out.returncode == 0, out.stderr
    return stat_counts(out.stderr)


@pytest.fixture
def python_script(tmp_path: Path):
    """Writes a Python program and returns the command that runs it with this interpreter."""

    def write(text: str, name: str = "program.py") -> List[str]:
        path = tmp_path / name
        path.write_text(text)
        return [sys.executable, str(path)]

    return write


def unprivileged() -> Optional[List[str]]:
    """The prefix that runs a command as ``nobody`` (setpriv, as .ci/run's unprivileged leg);
    ``None`` where this process cannot (not root, or no setpriv)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return None
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
