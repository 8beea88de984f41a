"""Bad input raises a clear Python exception carrying counterhal's kind, errno and hint, and
nothing a Python caller does crashes the interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

import counterhal
from conftest import counterhal_command


def command_error(*args: str) -> str:
    """What the counterhal command says on standard error for ``args`` (it fails)."""
    out = subprocess.run([counterhal_command(), *args], capture_output=True, text=True)
    assert out.returncode != 0, out
    return out.stderr


def test_an_unknown_event_is_an_invalid_event_error():
    """Oracle: the counterhal command's message for the same name (`stat -e`)."""
    with pytest.raises(counterhal.InvalidEventError) as caught:
        counterhal.count("page-faults,no-such-event")
    error = caught.value
    assert isinstance(error, counterhal.Error) and isinstance(error, ValueError)
    assert error.kind == "invalid event" and error.errno is None
    assert "no-such-event" in error.message and error.hint
    assert error.message in command_error("stat", "-e", "no-such-event", "--", "true")
    assert str(error).endswith(f"; hint: {error.hint}")
    misspelt = pytest.raises(counterhal.InvalidEventError, counterhal.Group, "page-fualts")
    assert "page-faults" in str(misspelt.value)  # the nearest names


def test_a_target_that_is_gone_is_a_not_found_error():
    """A process that has ended: ESRCH, as the kernel says it. Oracle: the counterhal
    command's `stat -p` of the same process, and the kernel's errno (3)."""
    child = subprocess.Popen(["true"])
    child.wait()
    with pytest.raises(counterhal.NotFoundError) as caught:
        counterhal.Group("task-clock", counterhal.process(child.pid))
    error = caught.value
    assert isinstance(error, LookupError) and error.kind == "not found"
    said = command_error("stat", "-e", "task-clock", "-p", str(child.pid))
    assert str(child.pid) in said or "no such process" in said.lower(), said
    with pytest.raises(counterhal.NotFoundError):
        counterhal.Group("task-clock", counterhal.thread(child.pid))
    with pytest.raises(counterhal.NotFoundError):
        counterhal.run(["/no/such/program"], "task-clock")


def test_a_closed_group_refuses_all_but_its_last_counts():
    """Oracle: Python's own closed files (io's ValueError on a closed file): a closed group is
    an InvalidInputError, a ValueError, on every operation but reading its last counts."""
    group = counterhal.Group("task-clock")
    group.start()
    group.close()
    group.close()  # twice: nothing
    for operation in (group.start, group.stop, group.reset, group.read):
        with pytest.raises(counterhal.InvalidInputError, match="closed") as caught:
            operation()
        assert isinstance(caught.value, ValueError) and caught.value.kind == "invalid input"
    assert group["task-clock"].value > 0
    metrics = counterhal.Metrics("page_faults_per_second")
    metrics.close()
    with pytest.raises(counterhal.InvalidInputError, match="closed"):
        metrics.read()
    with counterhal.count("task-clock") as c:
        pass
    with pytest.raises(counterhal.InvalidInputError):
        c.start()


@pytest.mark.parametrize(
    "call",
    [
        lambda: counterhal.Group(""),
        lambda: counterhal.Group("page-faults,,task-clock"),
        lambda: counterhal.Group([]),
        lambda: counterhal.Group(42),
        lambda: counterhal.Group(["page-faults", "page-faults"]),
        lambda: counterhal.Group("page-faults", target="me"),
        lambda: counterhal.Group("page-faults", target=-1),
        lambda: counterhal.Group("page-faults", target=2**40),
        lambda: counterhal.Group("page-faults", domain="everywhere"),
        lambda: counterhal.cpu(-1),
        lambda: counterhal.cpus("3-1"),
        lambda: counterhal.cpus(["a"]),
        lambda: counterhal.Group("task-clock", counterhal.cpu(1 << 30)),
        lambda: counterhal.cgroup("no/such/cgroup"),
        lambda: counterhal.cgroup("../../etc"),
        lambda: counterhal.run([], "task-clock"),
        lambda: counterhal.run(["true"], "no-such-event"),
        lambda: counterhal.Session(backend="windows"),
        lambda: counterhal.Group("pmu/that/isnt/"),
        lambda: counterhal.Group("cpu/event=0xzz/"),
        lambda: counterhal.Group("\0"),
        lambda: counterhal.Group("x" * 100_000),
        lambda: counterhal.Group("syscalls:sys_enter_getpid:zz"),
        lambda: counterhal.metrics(""),
    ],
)
def test_bad_input_is_an_exception(call):
    """Every bad argument is an exception a caller can catch (counterhal.Error, or Python's
    TypeError/OverflowError/ValueError for a value of the wrong type or range), never a
    crash or a panic (pyo3's PanicException is a BaseException, not an Exception).
    Oracle: Python's exception hierarchy."""
    with pytest.raises((counterhal.Error, TypeError, OverflowError, ValueError)) as caught:
        call()
    assert str(caught.value)


BATTERY = r"""
import os, sys, threading, counterhal

def attempt(call):
    try:
        call()
    except Exception:
        pass

group = counterhal.Group("task-clock,page-faults")
group.start()
# Reads, stops and closes racing on several threads.
def race():
    for _ in range(2000):
        attempt(group.read)
        attempt(group.stop)
        attempt(group.start)
threads = [threading.Thread(target=race) for _ in range(4)]
for t in threads: t.start()
attempt(group.close)
for t in threads: t.join()
# A group used after a fork, in the child.
other = counterhal.Group("task-clock")
other.start()
pid = os.fork()
if pid == 0:
    attempt(other.read); attempt(other.stop); attempt(other.close)
    os._exit(0)
os.waitpid(pid, 0)
# Many groups opened and dropped: descriptors are released.
for _ in range(3000):
    counterhal.Group("task-clock")
# Deleting while counting, garbage collected; a group in a cycle; groups and metrics left
# open, in a thread too, for the interpreter's end to collect.
g = counterhal.Group("page-faults"); g.start(); del g
cycle = [counterhal.Group("task-clock")]; cycle.append(cycle); del cycle
import gc; gc.collect()
kept = counterhal.Group("task-clock"); kept.start()
cycle = [counterhal.Metrics("page_faults_per_second")]; cycle.append(cycle)
threading.Thread(target=lambda: counterhal.Group("task-clock").start(), daemon=True).start()
print("alive")
"""


def test_nothing_crashes_the_interpreter():
    """Races between threads, a fork, thousands of groups dropped: the interpreter ends
    normally. Oracle: the process's exit status (a crash is a signal) and the descriptors
    left (a leak would exhaust them)."""
    before = len(os.listdir("/proc/self/fd"))
    out = subprocess.run([sys.executable, "-c", BATTERY], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "alive"
    assert "panicked" not in out.stderr, out.stderr
    groups = [counterhal.Group("task-clock") for _ in range(100)]
    del groups
    assert len(os.listdir("/proc/self/fd")) == before


def test_reads_from_many_threads_agree():
    """A group read from several threads at once: every read succeeds and no count goes
    backwards. Oracle: the kernel's counts, monotonic while counting."""
    group = counterhal.Group("task-clock")
    group.start()
    failures = []

    def reader():
        last = 0
        for _ in range(2000):
            value = group.read()["task-clock"].value
            if value < last:
                failures.append((last, value))
            last = value

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    group.close()
    assert not failures
