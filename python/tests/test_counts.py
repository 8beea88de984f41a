"""Counts from Python against perf's and the counterhal command's, for the same work.

The exact ones: the page faults of touching N fresh pages and N getpid calls through the
``syscalls:sys_enter_getpid`` tracepoint, counted in one process by a ``Group`` and, around the
same stretch, by ``perf stat`` (or ``counterhal stat``) driving counting through its control
descriptors (``-D -1 --control fd:CTL,ACK``, as benchmark harnesses drive perf). Then a command
counted by ``counterhal.run`` against both tools counting the same command.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import counterhal
from conftest import (
    EXACT_EVENTS,
    counterhal_command,
    perf_command,
    stat,
    stat_counts,
    tracepoints_here,
)

#: Counted in one process by a Group and, through their control descriptors, by the tools.
#: Every step runs once before either counts, so that no code page faults in the stretch
#: measured; the tool is enabled just before the group and disabled just after it.
SIDE_BY_SIDE = r"""
import os, sys
sys.path.insert(0, {tests!r})
import counterhal
from conftest import fresh_pages, getpids, touch

ctl, ack, pages, calls = map(int, sys.argv[1:5])

def tool(command):
    os.write(ctl, command + b"\n")
    assert os.read(ack, 5).startswith(b"ack")

group = counterhal.Group({events!r})
warm = fresh_pages(2)
tool(b"disable")
group.start(); touch(warm, 2); getpids(2); group.stop(); group.reset(); group.read()
memory = fresh_pages(pages)
tool(b"enable")
group.start()
touch(memory, pages)
getpids(calls)
group.stop()
tool(b"disable")
counts = group.read()
print(",".join(str(counts[name].value) for name in {names!r}))
"""


def side_by_side(tool, pages: int, calls: int):
    """The counts of the Group and of ``TOOL stat`` for ``pages`` fresh pages touched and
    ``calls`` getpid calls in one Python process: (ours, the tool's), by event name."""
    names = EXACT_EVENTS.split(",")
    program = SIDE_BY_SIDE.format(
        tests=os.path.dirname(__file__), events=EXACT_EVENTS, names=names
    )
    ctl_read, ctl_write = os.pipe()
    ack_read, ack_write = os.pipe()
    descriptors = (ctl_read, ctl_write, ack_read, ack_write)
    try:
        out = subprocess.run(
            [*tool, "stat", "-x,", "-D", "-1", "--control", f"fd:{ctl_read},{ack_write}",
             "-e", EXACT_EVENTS, "--", sys.executable, "-c", program,
             str(ctl_write), str(ack_read), str(pages), str(calls)],
            pass_fds=descriptors, capture_output=True, text=True, timeout=120,
        )
    finally:
        for descriptor in descriptors:
            os.close(descriptor)
    assert out.returncode == 0, out.stderr
    ours = dict(zip(names, map(int, out.stdout.split(","))))
    return ours, stat_counts(out.stderr)


@pytest.mark.parametrize("oracle", ["perf", "counterhal stat"])
@pytest.mark.parametrize("pages,calls", [(1, 1), (1000, 5000)])
def test_exact_counts_equal_the_tools(oracle, pages, calls):
    """Oracle: perf 6.1's and the counterhal command's counts of the same stretch of one
    process (their control descriptors), and the work itself (one fault a fresh page, one
    event a getpid call)."""
    tracepoints_here()
    tool = [perf_command()] if oracle == "perf" else [counterhal_command()]
    ours, theirs = side_by_side(tool, pages, calls)
    assert ours == {"page-faults": pages, "syscalls:sys_enter_getpid": calls}
    assert theirs == ours, f"{oracle}: {theirs}, ours {ours}"


def test_a_block_counts_its_own_work(python_script):
    """``count()`` around the work counts the work alone, in this process as in another.
    Oracle: the work (one fault a fresh page, one event a getpid call)."""
    tracepoints_here()
    from conftest import fresh_pages, getpids, touch

    for pages, calls in [(10, 10), (500, 2000)]:
        memory = fresh_pages(pages)
        touch(fresh_pages(1), 1)  # the paths of a touch, once
        with counterhal.count(EXACT_EVENTS) as c:
            touch(memory, pages)
            getpids(calls)
        assert c["syscalls:sys_enter_getpid"].value == calls
        # The block's own code and objects may fault a page or two the first time.
        assert pages <= c["page-faults"].value <= pages + 2, c


GETPIDS = "import os\nfor _ in range(int({calls})): os.getpid()\n"


def test_a_command_counts_as_the_tools_count_it(python_script):
    """``run()`` counts a command from its exec to its end as ``perf stat --`` and
    ``counterhal stat --`` count it. Oracle: perf 6.1 and the counterhal command on the same
    command: the getpid tracepoint exactly (the interpreter's start makes the same calls each
    time), page faults within 2% (a start's faults differ by a few from run to run)."""
    tracepoints_here()
    command = python_script(GETPIDS.format(calls=3000))
    ours = counterhal.run(command, EXACT_EVENTS)
    assert ours.returncode == 0
    perf = stat([perf_command()], EXACT_EVENTS, command)
    tool = stat([counterhal_command()], EXACT_EVENTS, command)
    getpid = "syscalls:sys_enter_getpid"
    assert ours[getpid].value == perf[getpid] == tool[getpid]
    assert ours[getpid].value >= 3000
    for theirs in (perf, tool):
        faults = theirs["page-faults"]
        assert abs(ours["page-faults"].value - faults) <= faults // 50, (ours.counts, theirs)


def test_this_process_counts_its_children(python_script):
    """``this_process()`` counts the threads and processes it creates after the open, as
    ``perf stat -p`` with inherit does. Oracle: the child's own 1,234 getpid calls, which
    ``counterhal.run`` counts from the same command's exec (tested against perf above)."""
    tracepoints_here()
    command = python_script(GETPIDS.format(calls=1234))
    alone = counterhal.run(command, "syscalls:sys_enter_getpid")
    with counterhal.count("syscalls:sys_enter_getpid", counterhal.this_process()) as c:
        subprocess.run(command, check=True)
    # subprocess's fork and exec make no getpid call of their own after the fork.
    assert alone["syscalls:sys_enter_getpid"].value >= 1234
    assert c["syscalls:sys_enter_getpid"].value == alone["syscalls:sys_enter_getpid"].value
    with counterhal.count("syscalls:sys_enter_getpid") as this_thread:
        subprocess.run(command, check=True)
    assert this_thread["syscalls:sys_enter_getpid"].value < 1234
