"""Hardware performance counters around a block of Python, by perf's names.

::

    import counterhal

    with counterhal.count("task-clock,page-faults") as c:
        data = [0] * 1_000_000
    print(c["page-faults"].value)

``count()`` opens the events on this thread for one ``with`` block; ``Group`` keeps them open
(``start``, ``stop``, ``reset``, ``read``) on any target: ``this_thread()``,
``this_process()`` (with the threads and processes it creates), ``process(pid)``,
``thread(tid)``, ``cpu(n)``, ``cpus("0-3")``, ``all_cpus()``, ``cgroup(name)``. ``run()``
counts a command from its ``exec``; ``metrics()`` and ``Metrics`` count metrics by perf's
names (``IPC``, ``tma_retiring``); ``events()`` and ``list_metrics()`` list what this
machine counts. Errors are ``counterhal.Error`` and its subclasses (``counterhal.errors``),
each with counterhal's ``kind``, ``errno`` and ``hint``.

The guide is docs/python.md in counterhal's repository.
"""

from collections.abc import Mapping

from ._counterhal import (
    Counts,
    Event,
    Group,
    Metric,
    Metrics,
    MetricValue,
    Reading,
    Run,
    Session,
    Target,
    all_cpus,
    cgroup,
    count,
    cpu,
    cpus,
    events,
    list_metrics,
    metrics,
    process,
    run,
    this_process,
    this_thread,
    thread,
)
from ._counterhal import __version__
from .errors import (
    BusyError,
    DeviceMissingError,
    Error,
    InvalidEventError,
    InvalidInputError,
    LimitReachedError,
    NoCounterAvailableError,
    NotCountedError,
    NotFoundError,
    PermissionDeniedError,
    UnsupportedError,
)

# A read's counts are a mapping of event name to Reading.
Mapping.register(Counts)

__all__ = [
    "__version__",
    "BusyError",
    "Counts",
    "DeviceMissingError",
    "Error",
    "Event",
    "Group",
    "InvalidEventError",
    "InvalidInputError",
    "LimitReachedError",
    "Metric",
    "MetricValue",
    "Metrics",
    "NoCounterAvailableError",
    "NotCountedError",
    "NotFoundError",
    "PermissionDeniedError",
    "Reading",
    "Run",
    "Session",
    "Target",
    "UnsupportedError",
    "all_cpus",
    "cgroup",
    "count",
    "cpu",
    "cpus",
    "events",
    "list_metrics",
    "metrics",
    "process",
    "run",
    "this_process",
    "this_thread",
    "thread",
]
