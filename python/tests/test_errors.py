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
    an InvalidInputError, a ValueError, on every operation but reading its last counts, which
    ``read()`` and ``group[name]`` give (as the counts a ``with`` block held)."""
    group = counterhal.Group("task-clock")
    group.start()
    group.close()
    group.close()  # twice: nothing
    for operation in (group.start, group.stop, group.reset):
        with pytest.raises(counterhal.InvalidInputError, match="closed") as caught:
            operation()
        assert isinstance(caught.value, ValueError) and caught.value.kind == "invalid input"
    assert group["task-clock"].value > 0
    assert group.read()["task-clock"] == group["task-clock"] == group.read()[0]
    metrics = counterhal.Metrics("page_faults_per_second")
    metrics.start()
    metrics.close()
    assert metrics.read()["page_faults_per_second"].unit == "faults/sec"
    with pytest.raises(counterhal.InvalidInputError, match="closed"):
        metrics.start()
    with counterhal.count("task-clock") as c:
        sum(range(10_000))
    with pytest.raises(counterhal.InvalidInputError):
        c.start()
    held = c.read()
    assert held["task-clock"].value > 0 and held["task-clock"] == c["task-clock"]


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


HUGE_CPU_LISTS = r"""
import time, counterhal
started = time.monotonic()
for make in (
    lambda cpus: counterhal.Group("task-clock", counterhal.cpus(cpus)),
    lambda cpus: counterhal.Group("task-clock", counterhal.cgroup("/", cpus=cpus)),
    lambda cpus: counterhal.metrics("page_faults_per_second", counterhal.cpus(cpus)),
):
    for cpus in ("0-4294967295", "0-99999999"):
        try:
            make(cpus)
        except counterhal.InvalidInputError as error:
            print(error)
        else:
            print("opened", cpus)
print(time.monotonic() - started)
"""


def test_a_cpu_list_past_the_online_cpus_is_refused_at_once():
    """``cpus("0-4294967295")`` on any target is refused before it is expanded into one
    target per CPU (that expansion asked the allocator for 96 GiB and aborted the
    interpreter; ``0-99999999`` took 9 s and 2.3 GB). Oracle: the kernel's list of the CPUs
    online (/sys/devices/system/cpu/online), which the refusal names; the process's exit
    status (an abort is SIGABRT) and its peak memory (``getrusage``)."""
    import resource

    with open("/sys/devices/system/cpu/online") as file:
        online = file.read().strip()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = subprocess.run([sys.executable, "-c", HUGE_CPU_LISTS], capture_output=True,
                         text=True, timeout=120)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert out.returncode == 0, out.stderr[-2000:]
    *refusals, seconds = out.stdout.splitlines()
    assert len(refusals) == 6, out.stdout
    for refusal in refusals:
        assert "do not exist here" in refusal and f"(online: {online})" in refusal, refusal
    assert float(seconds) < 1.0, out.stdout
    assert peak_kb < max(before, 200_000), f"{peak_kb} KB"


def test_an_id_out_of_range_is_an_invalid_input_error():
    """A process, thread or CPU number no such thing can have is the face's ValueError
    (InvalidInputError) saying what is valid, as the backend says it of 0. Oracle: the
    backend's own refusal of process id 0, whose words the face's match."""
    zero = pytest.raises(counterhal.InvalidInputError, counterhal.Group, "task-clock", 0).value
    for call, named in [
        (lambda: counterhal.Group("task-clock", -5), "process id -5"),
        (lambda: counterhal.process(-1), "process id -1"),
        (lambda: counterhal.Group("task-clock", 2**40), f"process id {2**40}"),
        (lambda: counterhal.thread(-1), "thread id -1"),
        (lambda: counterhal.cpu(-1), "CPU -1"),
    ]:
        with pytest.raises(counterhal.InvalidInputError) as caught:
            call()
        error = caught.value
        assert isinstance(error, ValueError) and named in error.message and error.hint, error
        if named.startswith("process"):
            assert error.hint == zero.hint, (error, zero)
    with pytest.raises(TypeError, match="not str"):
        counterhal.process("1")


def test_an_environment_variable_named_with_an_equals_sign_is_refused():
    """Oracle: subprocess.run, which refuses the same environment with a ValueError
    ("illegal environment variable name") rather than pass ``A=B=c``."""
    env = {"A=B": "c", "PATH": os.environ["PATH"]}
    with pytest.raises(ValueError, match="illegal environment variable name") as theirs:
        subprocess.run(["true"], env=env)
    with pytest.raises(counterhal.InvalidInputError, match=theirs.value.args[0]) as ours:
        counterhal.run(["true"], "task-clock", env=env)
    assert isinstance(ours.value, ValueError) and "`A=B`" in ours.value.message
    kept = counterhal.run(["sh", "-c", 'test "$A" = "B=c"'], "task-clock", env={"A": "B=c"})
    assert kept.returncode == 0
