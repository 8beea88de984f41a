"""counterhal's pytest plugin: the ``counters`` fixture, and counts beside pytest-benchmark's
times.

pytest loads it by its entry point once the wheel is installed. The fixture is a ``Group``
of the events ``--counterhal-events`` names (or the ini option ``counterhal_events``; by
default ``task-clock,page-faults,context-switches,cpu-migrations``) on the test's thread::

    def test_parse(counters):
        with counters:
            parse(document)
        assert counters["page-faults"].value < 1000

In a test that also takes pytest-benchmark's ``benchmark`` fixture, every call of the
function it times is counted (started before each round and stopped after it, outside the
times it measures), and the counts go into the benchmark's ``extra_info["counterhal"]``,
with the mean per call, so that ``--benchmark-json`` and saved runs hold them beside the
times. Without pytest-benchmark the fixture works alone. Either way each test's counts are
recorded as its ``user_properties`` (``--junitxml`` writes them) and listed at the end of
the run.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pytest

import counterhal

#: perf's default software events, which every Linux machine counts.
DEFAULT_EVENTS = "task-clock,page-faults,context-switches,cpu-migrations"

#: What each test that took the fixture counted, for the summary at the end.
RECORDED = pytest.StashKey[List[Tuple[str, Dict[str, Any]]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("counterhal", "hardware performance counters (counterhal)")
    group.addoption(
        "--counterhal-events",
        dest="counterhal_events",
        default=None,
        metavar="EVENTS",
        help="the events the `counters` fixture counts, as perf stat -e takes them "
        f"(default: {DEFAULT_EVENTS})",
    )
    parser.addini(
        "counterhal_events",
        "the events the `counters` fixture counts (--counterhal-events)",
        default=DEFAULT_EVENTS,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[RECORDED] = []


class Counters:
    """The ``counters`` fixture: a ``counterhal.Group`` of the configured events on the test's
    thread, counting inside ``with counters:`` blocks (their counts add up) and, in a
    benchmark, in every round the benchmark times."""

    def __init__(self, events: str) -> None:
        self.group = counterhal.Group(events)
        #: The calls of a benchmarked function counted (None: no benchmark).
        self.calls: Optional[int] = None

    def __enter__(self) -> "Counters":
        self.group.start()
        return self

    def __exit__(self, *exception: object) -> bool:
        self.group.stop()
        return False

    def __getitem__(self, name: str) -> counterhal.Reading:
        """The reading of ``name`` now."""
        return self.group[name]

    def read(self) -> counterhal.Counts:
        """The counts now."""
        return self.group.read()

    @property
    def events(self) -> List[str]:
        """The events counted."""
        return self.group.events

    def follow(self, benchmark: Any) -> None:
        """Counts every call of the function ``benchmark`` times, outside its timing."""
        make_runner = getattr(benchmark, "_make_runner", None)
        if make_runner is None:  # a pytest-benchmark that runs its rounds otherwise
            return
        self.calls = 0

        def counted_runner(function: Any, args: Any, kwargs: Any) -> Any:
            runner = make_runner(function, args, kwargs)

            def run(loops_range: Any, *more: Any, **named: Any) -> Any:
                self.group.start()
                try:
                    return runner(loops_range, *more, **named)
                finally:
                    self.group.stop()
                    self.calls = (self.calls or 0) + (len(loops_range) if loops_range else 1)

            return run

        benchmark._make_runner = counted_runner

    def record(self) -> Dict[str, Any]:
        """What was counted, as JSON takes it: each event's reading, the note, and in a
        benchmark the calls counted and each event's mean per call."""
        counts = self.group.read()
        record: Dict[str, Any] = {
            "events": {
                name: {
                    "value": reading.value,
                    "enabled": reading.enabled,
                    "running": reading.running,
                    "scaled": reading.scaled,
                }
                for name, reading in counts.items()
            },
            "note": counts.note,
        }
        if self.calls is not None:
            record["calls"] = self.calls
            record["per_call"] = {
                name: (reading.scaled / self.calls if self.calls and reading.scaled is not None
                       else None)
                for name, reading in counts.items()
            }
        return record


@pytest.fixture
def counters(request: pytest.FixtureRequest):
    """Hardware performance counters of this test's thread (``--counterhal-events``): count
    a block with ``with counters:``, read ``counters["page-faults"]``; beside pytest-benchmark's
    ``benchmark`` fixture, every call it times is counted into its ``extra_info``."""
    config = request.config
    events = config.getoption("counterhal_events") or config.getini("counterhal_events")
    counted = Counters(events)
    benchmark = None
    if "benchmark" in request.fixturenames:
        benchmark = request.getfixturevalue("benchmark")
        counted.follow(benchmark)
    yield counted
    record = counted.record()
    counted.group.close()
    request.node.user_properties.append(("counterhal", record))
    if benchmark is not None:
        benchmark.extra_info["counterhal"] = record
    config.stash[RECORDED].append((request.node.nodeid, record))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    recorded = config.stash.get(RECORDED, [])
    if not recorded:
        return
    terminalreporter.write_sep("-", "counterhal")
    for nodeid, record in recorded:
        per_call = record.get("per_call")
        if per_call is not None:
            said = ", ".join(f"{name} {value:.6g}/call" for name, value in per_call.items()
                             if value is not None)
            said = f"{said} ({record['calls']} calls)"
        else:
            said = ", ".join(f"{name} {event['value']}" for name, event in record["events"].items())
        terminalreporter.write_line(f"{nodeid}: {said}")
        if record["note"]:
            terminalreporter.write_line(f"  note: {record['note']}")
