"""A group opened before ``os.fork()`` is the parent's: in the child every use of it raises
at once, before its lock is taken, and the parent's counts go on untouched, as the C API
refuses a set made before a fork (COUNTERHAL_ESTATE)."""

from __future__ import annotations

import os
import signal
import threading
import time

import counterhal
from conftest import fresh_pages, touch

#: The exit codes of a child: each use raised the error of a parent's group, or not.
REFUSED, USED = 3, 4


def in_child(use) -> int:
    """Forks; the child runs ``use()`` and exits REFUSED where it raised the refusal of a
    parent's group (an InvalidInputError naming fork()), USED where it did not raise. The
    parent gets the child's pid."""
    pid = os.fork()
    if pid == 0:
        code = USED
        try:
            use()
        except counterhal.InvalidInputError as error:
            code = REFUSED if "fork()" in error.message and error.hint else USED
        except BaseException:
            code = 1
        os._exit(code)
    return pid


def wait_for(pid: int, seconds: float):
    """The child's exit code, or None where it had not ended in ``seconds`` (it is killed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def test_a_child_cannot_reset_or_stop_the_parents_counters():
    """The child's ``reset()`` and ``stop()`` of a group its parent opened raise, and the
    parent's page faults are neither zeroed nor stopped (before, the child's reset and stop
    set the parent's 513 faults to 0 and left them stopped). Oracle: the work (one fault a
    fresh page, counted in the parent before the children and after them; the parent's
    writes after a fork add copy-on-write faults, never take any away)."""
    group = counterhal.Group("page-faults")
    memory = fresh_pages(600)
    touch(fresh_pages(1), 1)
    group.start()
    touch(memory, 300)
    before = group.read()["page-faults"].value
    assert 300 <= before <= 310, before
    for use in (group.reset, group.stop, group.read, group.start, group.close,
                lambda: group["page-faults"], lambda: group.closed):
        assert wait_for(in_child(use), 30) == REFUSED, use
    # A group the child opens is its own.
    assert wait_for(in_child(lambda: counterhal.count("page-faults").read()), 30) == USED
    assert group.read()["page-faults"].value >= before
    # The paths of a touch and a read, written once after the forks (copy-on-write).
    warm = fresh_pages(2)
    for page in range(2):
        touch(warm, 1, first=page)
        after = group.read()["page-faults"].value
    touch(memory, 300, first=300)  # pages never touched: still counted, one fault each
    group.stop()
    counted = group.read()["page-faults"].value - after
    assert 300 <= counted <= 310, counted
    group.close()


def test_a_fork_while_another_thread_holds_the_groups_lock_does_not_hang_the_child():
    """Forks while another thread starts and stops the group over and over (its lock held,
    the interpreter's released, inside each): the child's first use raises at once, never
    waits for a lock no thread of the child will release (before, 18 children of 20 hung).
    Oracle: the child's exit within 10 s (it is killed after)."""
    group = counterhal.Group("task-clock,page-faults,context-switches,cpu-migrations")
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            group.start()
            group.stop()
            group.reset()

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        codes = []
        for _ in range(20):
            time.sleep(0.002)
            codes.append(wait_for(in_child(group.read), 10))
    finally:
        stop.set()
        worker.join()
    group.close()
    assert codes == [REFUSED] * 20, codes
