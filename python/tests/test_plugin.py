"""The pytest plugin, run by pytest itself (pytester) as a user's test suite runs it: alone,
and beside pytest-benchmark, whose JSON output holds the counts."""

from __future__ import annotations

import json

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
