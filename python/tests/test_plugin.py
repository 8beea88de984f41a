"""The pytest plugin, run by pytest itself (pytester) as a user's test suite runs it: alone,
and beside pytest-benchmark, whose JSON output holds the counts."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import skip

pytest_plugins = ["pytester"]

#: A test module that touches fresh pages in a block, as a user writes one.
ALONE = """
import mmap

def test_block(counters):
    memory = mmap.mmap(-1, 300 * 4096)
    memory.madvise(mmap.MADV_NOHUGEPAGE)
    with counters:
        for at in range(0, 300 * 4096, 4096):
            memory[at] = 1
    assert counters.events == ["page-faults", "task-clock"]
    assert 300 <= counters["page-faults"].value <= 310
"""

#: A benchmark whose every call maps and touches 64 fresh pages.
BENCHMARKED = """
import mmap

def fresh_pages():
    memory = mmap.mmap(-1, 64 * 4096)
    memory.madvise(mmap.MADV_NOHUGEPAGE)
    for at in range(0, 64 * 4096, 4096):
        memory[at] = 1
    memory.close()

def test_pages(benchmark, counters):
    benchmark.pedantic(fresh_pages, rounds=20, iterations=5, warmup_rounds=2)

def test_default(benchmark, counters):
    benchmark(fresh_pages)
"""


def test_the_fixture_works_alone(pytester):
    """Without pytest-benchmark (disabled: -p no:benchmark) the fixture counts its block and
    the run lists the counts. Oracle: the work (one fault a fresh page)."""
    pytester.makepyfile(test_alone=ALONE)
    result = pytester.runpytest_subprocess(
        "-p", "no:benchmark", "--counterhal-events=page-faults,task-clock"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*counterhal*", "test_alone.py::test_block: page-faults 3*"])


def test_counts_go_beside_pytest_benchmarks_times(pytester):
    """With pytest-benchmark, each benchmark's JSON output holds the counts beside its times:
    the calls counted and the page faults per call. Oracle: the work (64 fresh pages a
    call) and pytest-benchmark's own rounds and iterations."""
    try:
        import pytest_benchmark  # noqa: F401
    except ImportError:
        skip("tools", "pytest-benchmark is not installed (pip install pytest-benchmark)")
    pytester.makepyfile(test_bench=BENCHMARKED)
    result = pytester.runpytest_subprocess(
        "--counterhal-events=page-faults,task-clock", "--benchmark-json=out.json"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*counterhal*", "*test_pages: page-faults 6*/call*"])
    output = json.loads((pytester.path / "out.json").read_text())
    by_name = {bench["name"]: bench for bench in output["benchmarks"]}
    pedantic = by_name["test_pages"]
    counted = pedantic["extra_info"]["counterhal"]
    # pedantic: warm-up and timed rounds, each of its iterations, every one counted.
    assert counted["calls"] == (20 + 2) * 5 == pedantic["stats"]["rounds"] * 5 + 2 * 5
    per_call = counted["per_call"]["page-faults"]
    assert 64 <= per_call <= 66, counted
    assert counted["events"]["task-clock"]["value"] > 0
    default = by_name["test_default"]["extra_info"]["counterhal"]
    stats = by_name["test_default"]["stats"]
    assert default["calls"] >= stats["rounds"] * stats["iterations"]
    assert 64 <= default["per_call"]["page-faults"] <= 66, default


#: A test of page faults, run with events this machine may not count beside them.
MIXED = """
import mmap

def test_block(counters):
    memory = mmap.mmap(-1, 300 * 4096)
    memory.madvise(mmap.MADV_NOHUGEPAGE)
    with counters:
        for at in range(0, 300 * 4096, 4096):
            memory[at] = 1
    assert 300 <= counters["page-faults"].value <= 310

def test_pages(benchmark, counters):
    def fresh_pages():
        memory = mmap.mmap(-1, 64 * 4096)
        memory.madvise(mmap.MADV_NOHUGEPAGE)
        for at in range(0, 64 * 4096, 4096):
            memory[at] = 1
        memory.close()
    benchmark.pedantic(fresh_pages, rounds=5, iterations=2)
"""

#: The events the guide shows: hardware ones beside a software one.
MIXED_EVENTS = "cycles,instructions,page-faults"


def perf_not_supported(events: str) -> set:
    """The events perf 6.1 prints as ``<not supported>`` here: the oracle of what this
    machine cannot count (a VM without a hardware PMU: cycles and instructions)."""
    from conftest import perf_command

    out = subprocess.run([perf_command(), "stat", "-x,", "-e", events, "true"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return {line.split(",")[2] for line in out.stderr.splitlines()
            if line.startswith("<not supported>")}


def test_events_this_machine_cannot_count_are_reported_not_errors(pytester):
    """With the guide's ``--counterhal-events=cycles,instructions,page-faults``, the events
    this machine counts are counted and the others reported as ``<not supported>`` in the
    summary and the benchmark's JSON, every test passing (before, every test that took the
    fixture was an error at setup on a machine without a PMU); ``--counterhal-strict`` makes
    them errors. Oracle: perf 6.1's ``<not supported>`` for the same events here, and the
    work (300 fresh pages)."""
    try:
        import pytest_benchmark  # noqa: F401
    except ImportError:
        skip("tools", "pytest-benchmark is not installed (pip install pytest-benchmark)")
    missing = perf_not_supported(MIXED_EVENTS)
    assert "page-faults" not in missing
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest_subprocess(
        f"--counterhal-events={MIXED_EVENTS}", "--benchmark-json=out.json"
    )
    result.assert_outcomes(passed=2)
    said = result.stdout.str()
    for name in MIXED_EVENTS.split(","):
        assert (f"{name} <not supported>" in said) == (name in missing), (name, said)
    output = json.loads((pytester.path / "out.json").read_text())
    counted = output["benchmarks"][0]["extra_info"]["counterhal"]
    for name, event in counted["events"].items():
        assert ("not_supported" in event) == (name in missing), (name, event)
        assert (event["value"] is None) == (name in missing), (name, event)
    assert 64 <= counted["per_call"]["page-faults"] <= 66, counted
    strict = pytester.runpytest_subprocess(f"--counterhal-events={MIXED_EVENTS}",
                                           "--counterhal-strict", "-p", "no:benchmark",
                                           "-k", "test_block")
    if missing:
        strict.assert_outcomes(errors=1)
        strict.stdout.fnmatch_lines(["*Error*"])
    else:
        strict.assert_outcomes(passed=1)


def test_a_group_not_strict_counts_what_counts_here():
    """``strict=False``, grouped or not: the events perf counts here count, reading another
    raises why, and a name that means nothing is an error still. Oracle: perf 6.1's
    ``<not supported>`` for the same events, and the work (one fault a fresh page)."""
    import counterhal
    from conftest import fresh_pages, touch

    missing = perf_not_supported(MIXED_EVENTS)
    for grouped in (True, False):
        group = counterhal.Group(MIXED_EVENTS, grouped=grouped, strict=False)
        memory = fresh_pages(100)
        touch(fresh_pages(1), 1)
        with group:
            touch(memory, 100)
        counts = group.read()
        assert 100 <= counts["page-faults"].value <= 102, counts
        for name in MIXED_EVENTS.split(","):
            if name in missing:
                with pytest.raises(counterhal.Error):
                    counts[name]
                assert counts.get(name) is None and "not counted" in repr(counts)
            else:
                assert counts[name].value > 0
        group.close()
    with pytest.raises(counterhal.InvalidEventError):
        counterhal.Group("page-faults,no-such-event", strict=False)
    if missing:
        with pytest.raises(counterhal.Error):
            counterhal.Group(MIXED_EVENTS)
