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

An event this machine cannot count (``cycles`` in a VM without a hardware PMU) is not
counted, as ``perf stat`` prints ``<not supported>`` for it, and the others are: the record
and the summary say so, and reading it raises why. ``--counterhal-strict`` (or the ini
option ``counterhal_strict``) makes it an error of every test that takes the fixture.
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
    group.addoption(
        "--counterhal-strict",
        dest="counterhal_strict",
        action="store_true",
        default=None,
        help="an event this machine cannot count is an error of each test that takes the "
        "`counters` fixture (default: it is reported as <not supported> and the rest count)",
    )
    parser.addini(
        "counterhal_events",
        "the events the `counters` fixture counts (--counterhal-events)",
        default=DEFAULT_EVENTS,
    )
    parser.addini(
        "counterhal_strict",
        "an event this machine cannot count fails the test (--counterhal-strict)",
        type="bool",
        default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[RECORDED] = []


class Counters:
    """The ``counters`` fixture: a ``counterhal.Group`` of the configured events on the test's
    thread, counting inside ``with counters:`` blocks (their counts add up) and, in a
    benchmark, in every round the benchmark times."""

    def __init__(self, events: str, strict: bool = False) -> None:
        self.group = counterhal.Group(events, strict=strict)
        counts = self.group.read()
        #: Why each event this machine cannot count is not counted (perf's <not supported>).
        self.not_supported: Dict[str, str] = {}
        for name in counts:
            try:
                counts[name]
            except counterhal.Error as error:
                self.not_supported[name] = str(error)
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
        """What was counted, as JSON takes it: each event's reading (``None`` for one this
        machine cannot count, with why under ``not_supported``), the note, and in a
        benchmark the calls counted and each event's mean per call."""
        counts = self.group.read()
        events: Dict[str, Any] = {}
        for name in counts:
            reading = counts.get(name)
            if reading is None:
                events[name] = {"value": None, "enabled": None, "running": None,
                                "scaled": None, "not_supported": self.not_supported[name]}
            else:
                events[name] = {"value": reading.value, "enabled": reading.enabled,
                                "running": reading.running, "scaled": reading.scaled}
        record: Dict[str, Any] = {"events": events, "note": counts.note}
        if self.calls is not None:
            record["calls"] = self.calls
            record["per_call"] = {
                name: (event["scaled"] / self.calls if self.calls and event["scaled"] is not None
                       else None)
                for name, event in events.items()
            }
        return record


@pytest.fixture
def counters(request: pytest.FixtureRequest):
    """Hardware performance counters of this test's thread (``--counterhal-events``): count
    a block with ``with counters:``, read ``counters["page-faults"]``; beside pytest-benchmark's
    ``benchmark`` fixture, every call it times is counted into its ``extra_info``."""
    config = request.config
    events = config.getoption("counterhal_events") or config.getini("counterhal_events")
    strict = config.getoption("counterhal_strict") or config.getini("counterhal_strict")
    counted = Counters(events, strict=bool(strict))
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
    not_supported: Dict[str, str] = {}
    for nodeid, record in recorded:
        said = []
        per_call = record.get("per_call")
        for name, event in record["events"].items():
            if "not_supported" in event:
                not_supported.setdefault(name, event["not_supported"])
                said.append(f"{name} <not supported>")
            elif per_call is not None:
                if per_call[name] is not None:
                    said.append(f"{name} {per_call[name]:.6g}/call")
            else:
                said.append(f"{name} {event['value']}")
        line = ", ".join(said)
        if per_call is not None:
            line = f"{line} ({record['calls']} calls)"
        terminalreporter.write_line(f"{nodeid}: {line}")
        if record["note"]:
            terminalreporter.write_line(f"  note: {record['note']}")
    for name, why in not_supported.items():
        terminalreporter.write_line(
            f"{name} <not supported> here: {why} (--counterhal-strict makes it an error)"
        )
