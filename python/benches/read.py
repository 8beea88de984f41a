"""The cost of a group read from Python: ``Group.read()`` of four software events beside a
bare ``os.read()`` of the same group's leader descriptor, the kernel's group record (what
``Group.read`` reads with one system call), measured side by side in one run.

    python python/benches/read.py [READS] [ROUNDS]

Each round times READS reads of each, one after the other (which goes first alternates),
and takes their ratio; the figure is the median of the rounds' ratios, so that a busy
stretch of the machine, which slows both of a round alike, does not move it. A control
times the bare read against itself the same way. The best round of each is printed too.
The descriptor is found as the file of this process that the group's open added, a
``perf_event`` anonymous inode.
"""

from __future__ import annotations

import os
import sys
import time

import counterhal

EVENTS = "task-clock,page-faults,context-switches,cpu-migrations"


def perf_descriptors() -> set:
    """This process's open perf event descriptors."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:[perf_event]":
                found.add(int(name))
        except OSError:
            pass
    return found


def group_reads_ns(group: counterhal.Group, reads: int) -> float:
    """Nanoseconds per ``group.read()``, over ``reads`` calls."""
    read, loop = group.read, range(reads)
    start = time.perf_counter_ns()
    for _ in loop:
        read()
    return (time.perf_counter_ns() - start) / reads


def bare_reads_ns(descriptor: int, size: int, reads: int) -> float:
    """Nanoseconds per ``os.read(descriptor, size)``, over ``reads`` calls."""
    read, loop = os.read, range(reads)
    start = time.perf_counter_ns()
    for _ in loop:
        read(descriptor, size)
    return (time.perf_counter_ns() - start) / reads


def median(values: list) -> float:
    """The middle of ``values`` (an odd count)."""
    return sorted(values)[len(values) // 2]


def main() -> int:
    reads = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 301
    before = perf_descriptors()
    group = counterhal.Group(EVENTS)
    leader = min(perf_descriptors() - before)
    group.start()
    record = len(os.read(leader, 4096))
    # The record of 4 events with their ids: nr, enabled, running, then value and id each.
    assert record == 8 * (3 + 2 * 4), record
    ratios, controls = [], []
    best_ours = best_bare = float("inf")
    for turn in range(rounds):
        if turn % 2:
            ours = group_reads_ns(group, reads)
            bare = bare_reads_ns(leader, record, reads)
        else:
            bare = bare_reads_ns(leader, record, reads)
            ours = group_reads_ns(group, reads)
        again = bare_reads_ns(leader, record, reads)
        ratios.append(ours / bare)
        controls.append(again / bare)
        best_ours, best_bare = min(best_ours, ours), min(best_bare, bare)
    group.close()
    print(f"Group.read() of {EVENTS}: {best_ours:.0f} ns (best round)")
    print(f"os.read() of its leader ({record} bytes): {best_bare:.0f} ns (best round)")
    print(f"control (os.read() against itself): {median(controls):.3f}")
    print(f"ratio: {median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
