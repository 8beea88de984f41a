"""The face a Python author meets: groups, targets, commands, metrics, listings, sessions."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

import counterhal
from conftest import (
    counterhal_command,
    fresh_pages,
    getpids,
    perf_command,
    skip,
    touch,
    tracepoints_here,
    unprivileged,
)


def test_a_group_starts_stops_resets_and_reads():
    """start, stop, reset and read as perf's ioctls do them. Oracle: the work (one fault a
    fresh page), and the kernel's times (running never past enabled)."""
    group = counterhal.Group(["page-faults", "task-clock"])
    assert group.events == ["page-faults", "task-clock"]
    assert group.read()["page-faults"].value == 0  # opened stopped
    memory = fresh_pages(300)
    touch(fresh_pages(1), 1)  # the paths of a touch, once
    group.start()
    touch(memory, 100)
    group.stop()
    first = group.read()
    assert 100 <= first["page-faults"].value <= 102
    touch(memory, 100, first=100)  # stopped: not counted
    assert group.read()["page-faults"] == first["page-faults"]
    group.start()
    touch(memory, 100, first=200)
    group.stop()
    second = group.read()
    assert 100 <= (second - first)["page-faults"].value <= 102
    reading = second["task-clock"]
    assert 0 < reading.running <= reading.enabled and reading.scaled == reading.value
    group.reset()
    zeroed = group.read()
    assert zeroed["page-faults"].value == 0 and zeroed["task-clock"].enabled == 0
    group.close()
    assert group.closed


def test_counts_are_a_mapping():
    """Counts read by name or position, iterate, convert; a name not counted is a KeyError
    naming the events. Oracle: Python's mapping protocol (collections.abc.Mapping)."""
    with counterhal.count("page-faults,task-clock") as c:
        touch(fresh_pages(5), 5)
    assert c.closed and isinstance(c["task-clock"], counterhal.Reading)
    group = counterhal.Group("page-faults,task-clock")
    counts = group.read()
    assert list(counts) == counts.keys() == ["page-faults", "task-clock"]
    assert len(counts) == 2 and "task-clock" in counts and "cycles" not in counts
    assert counts[0] == counts["page-faults"] and counts[-1] == counts["task-clock"]
    assert counts.get("cycles") is None and counts.get("cycles", 7) == 7
    assert dict(counts.items()) == {name: counts[name] for name in counts}
    assert counts.to_dict() == {"page-faults": 0, "task-clock": 0}
    with pytest.raises(KeyError, match="page-faults, task-clock"):
        counts["cycles"]
    with pytest.raises(IndexError):
        counts[2]
    with pytest.raises(TypeError):
        counts[1.5]


def test_a_reading_scales_as_the_crate_does():
    """Oracle: hal's `Reading::scaled` arithmetic (hal/src/reading.rs's tests): rounded half
    up, None when the event never ran, unscaled when it ran all the time."""
    assert counterhal.Reading(1_000, 3, 2).scaled == 1_500
    assert counterhal.Reading(1, 3, 2).scaled == 2
    assert counterhal.Reading(123, 1_000, 0).scaled is None
    assert counterhal.Reading(42, 1_000, 1_000).scaled == 42
    assert counterhal.Reading(7, 10, 5).multiplexed
    assert counterhal.Reading(10, 20, 5) - counterhal.Reading(4, 5, 5) == counterhal.Reading(6, 15, 0)


def test_targets_count_where_they_say():
    """A thread, this process, a process by id, CPUs: each counts what runs there.
    Oracle: the work on another thread (one event a getpid call), which this thread's group
    does not see and the process's does."""
    tracepoints_here()
    event = "syscalls:sys_enter_getpid"
    process = counterhal.Group(event, counterhal.this_process())
    by_pid = counterhal.Group(event, os.getpid())
    here = counterhal.Group(event)
    for group in (process, by_pid, here):
        group.start()
    worker = threading.Thread(target=getpids, args=(4000,))
    worker.start()
    worker.join()
    for group in (process, by_pid, here):
        group.stop()
    assert here.read()[event].value < 10
    for group in (process, by_pid):
        assert 4000 <= group.read()[event].value < 4010
    assert repr(counterhal.process(1)) == "counterhal.process(1)"
    assert counterhal.cpus("0-1") == counterhal.cpus([0, 1])


def test_a_thread_by_id_and_cpus():
    """Oracle: the kernel's own thread id of a worker (threading.get_native_id) and the
    CPUs online (os.sched_getaffinity)."""
    tracepoints_here()
    event = "syscalls:sys_enter_getpid"
    ready, go = threading.Event(), threading.Event()
    native = []

    def work():
        native.append(threading.get_native_id())
        ready.set()
        go.wait()
        getpids(2500)

    worker = threading.Thread(target=work)
    worker.start()
    ready.wait()
    with counterhal.count(event, counterhal.thread(native[0])) as c:
        go.set()
        worker.join()
    assert c[event].value == 2500
    cpu = next(iter(os.sched_getaffinity(0)))
    try:
        with counterhal.count("cpu-clock", counterhal.cpu(cpu)) as c:
            time.sleep(0.01)
    except counterhal.PermissionDeniedError as error:
        assert error.errno is not None and error.hint
        skip("privilege", f"counting a CPU takes privilege here: {error}")
    assert c["cpu-clock"].value > 0


def test_the_interpreter_lock_is_released_while_a_command_runs():
    """While one thread waits in run() (the kernel asked to count a command), another runs
    Python. Oracle: the other thread's progress during the command's 0.3 s sleep."""
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    ticker = threading.Thread(target=tick)
    ticker.start()
    started = time.monotonic()
    result = counterhal.run(["sleep", "0.3"], "task-clock")
    ended = time.monotonic()
    done.set()
    ticker.join()
    assert result.returncode == 0 and result.elapsed >= 0.29
    during = [t for t in ticks if started < t < ended]
    assert len(during) >= 20, f"{len(during)} ticks while the command ran"


def test_a_command_reports_its_end(tmp_path):
    """returncode as subprocess reports it, cwd and env as subprocess takes them. Oracle:
    subprocess.run on the same commands."""
    for command in (["sh", "-c", "exit 3"], ["sh", "-c", "kill -TERM $$"]):
        ours = counterhal.run(command, "task-clock")
        assert ours.returncode == subprocess.run(command).returncode
    out = tmp_path / "out"
    counted = counterhal.run(
        ["sh", "-c", 'pwd > out; echo "$ONLY" >> out'], "page-faults",
        cwd=tmp_path, env={"ONLY": "this", "PATH": os.environ["PATH"]},
    )
    assert counted.returncode == 0 and counted.pid > 0
    assert out.read_text() == f"{tmp_path}\nthis\n"
    assert counted["page-faults"].value > 0 and counted.counts.note is None


def test_an_event_a_command_cannot_count_is_its_own_error():
    """As perf stat's `<not supported>`: the other events count. Oracle: perf 6.1 on this
    machine (hardware events fail where the machine has no PMU)."""
    result = counterhal.run(["true"], "task-clock,cycles")
    assert result["task-clock"].value > 0
    try:
        result["cycles"]
    except counterhal.Error as error:
        assert error.kind in ("unsupported", "not found", "permission denied"), error
    else:
        assert result["cycles"].value > 0  # a machine with a PMU


def command_metrics(*args: str) -> dict:
    """The metrics ``counterhal list --metrics --json ARGS`` lists, by name: those it offers
    and the portable ones it does not (they cannot run here)."""
    out = subprocess.run([counterhal_command(), "list", "--metrics", "--json", *args],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    return {m["name"]: m for m in listed["metrics"] + listed["portable_not_offered"]}


def test_metrics_by_perfs_names():
    """A portable metric counts; a model's metric is read from the model's tables; one whose
    events do not count here is refused by its name. Oracle: the counterhal command's
    `list --metrics --json` (the same tables: names, formulas, units) and the work's faults."""
    with counterhal.metrics("page_faults_per_second") as m:
        touch(fresh_pages(200), 200)
    value = m["page_faults_per_second"]
    assert value.unit == "faults/sec" and value.value > 0
    for session, args in [(None, []), (counterhal.Session(cpu_model="spr"), ["--cpu-model", "spr"])]:
        ours = {metric.name: metric for metric in counterhal.list_metrics(session=session)}
        theirs = command_metrics(*args)
        assert set(ours) == set(theirs)
        for name, metric in theirs.items():
            if "expression" in metric:
                assert ours[name].expression == metric["expression"], name
                assert ours[name].unit == metric["unit"], name
    spr = counterhal.Session(cpu_model="spr")
    retiring = [m for m in counterhal.list_metrics("tma_retiring", session=spr)
                if m.name == "tma_retiring"]
    assert retiring[0].model == "spr" and retiring[0].events and retiring[0].unit
    assert "IPC" in {m.name for m in counterhal.list_metrics("ipc")}
    if not counterhal.events("instructions"):  # no PMU: IPC cannot count
        with pytest.raises(counterhal.Error, match="metric IPC reads"):
            counterhal.metrics("IPC")
    with pytest.raises(counterhal.InvalidInputError, match="No_Such_Metric"):
        counterhal.metrics("No_Such_Metric")


def test_events_lists_what_this_machine_counts():
    """Every software event perf lists counts here under its name. Oracle: perf 6.1's
    `perf list sw`; the counterhal command's `list --json` for the rest."""
    out = subprocess.run([perf_command(), "list", "sw"], capture_output=True, text=True)
    perfs = [line.split("[")[0].split(" OR ")[0].strip()
             for line in out.stdout.splitlines() if "[Software event]" in line]
    assert len(perfs) >= 8, out.stdout
    usable = {event.name for event in counterhal.events()}
    missing = [name for name in perfs if name not in usable]
    assert not missing, missing
    every = counterhal.events(all=True)
    assert {e.name for e in every} >= usable
    assert all(e.reason for e in every if not e.usable)
    listed = subprocess.run([counterhal_command(), "list", "--json", "page-faults"],
                            capture_output=True, text=True)
    theirs = json.loads(listed.stdout)
    ours = counterhal.events("page-faults", all=True)
    assert [e.name for e in ours] == [e["name"] for e in theirs]


def test_a_session_names_the_model():
    """Oracle: the counterhal command's `info` for the model this machine matched."""
    default = counterhal.Session()
    assert default.backend == "linux"
    out = subprocess.run([counterhal_command(), "info"], capture_output=True, text=True)
    model = next(line.split()[1] for line in out.stdout.splitlines() if line.startswith("model:"))
    assert default.cpu_model == (None if model == "none" else model)
    assert counterhal.Session(cpu_model="skl").cpu_model == "skl"
    with pytest.raises(counterhal.InvalidInputError, match="pentium9000"):
        counterhal.Session(cpu_model="pentium9000")


UNPRIVILEGED = """
import counterhal
with counterhal.count("task-clock,page-faults") as c:
    bytearray(1 << 20)
print(c.note)
print(c["task-clock"].value > 0)
"""


def test_an_unprivileged_user_counts_user_space_with_the_note():
    """Where the system refuses counting the kernel (perf_event_paranoid 2 for a user without
    CAP_PERFMON), events count user space only and the note says so, as the command says it.
    Oracle: the counterhal command's note for the same user and events."""
    prefix = unprivileged()
    if prefix is None:
        skip("privilege", "needs root and setpriv to run as nobody")
    with open("/proc/sys/kernel/perf_event_paranoid") as file:
        paranoid = int(file.read())
    if paranoid < 2:
        skip("system", f"perf_event_paranoid is {paranoid}: nobody may count the kernel")
    probe = subprocess.run([*prefix, sys.executable, "-c", "import counterhal"],
                           capture_output=True, text=True, cwd="/")
    if probe.returncode != 0:
        skip("privilege", f"nobody cannot run this interpreter and the wheel: {probe.stderr}")
    ours = subprocess.run([*prefix, sys.executable, "-c", UNPRIVILEGED],
                          capture_output=True, text=True, cwd="/")
    assert ours.returncode == 0, ours.stderr
    note, counted = ours.stdout.splitlines()
    assert counted == "True" and "user space" in note, note
    theirs = subprocess.run([*prefix, counterhal_command(), "stat", "-e", "task-clock,page-faults",
                             "--", "true"], capture_output=True, text=True, cwd="/")
    assert theirs.returncode == 0, theirs.stderr
    # The command names the events as it counts them (`task-clock:u`), the library as asked.
    assert note in theirs.stderr.replace(":u", ""), theirs.stderr


CGROUP_WORK = """
import mmap, os, sys
with open(sys.argv[1], "w") as procs:
    procs.write(str(os.getpid()))
memory = mmap.mmap(-1, 2000 * 4096)
memory.madvise(mmap.MADV_NOHUGEPAGE)
for at in range(0, 2000 * 4096, 4096):
    memory[at] = 1
"""


def cgroup2_mount():
    """The last cgroup2 mount, where perf finds cgroups by name when no v1 hierarchy has the
    perf_event controller (as counterhal::cgroups::root reads /proc/self/mountinfo)."""
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            fields = line.split()
            if "perf_event" in line and " - cgroup " in line:
                return fields[4]
    found = None
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            if " - cgroup2 " in line:
                found = line.split()[4]
    return found


def test_a_cgroup_is_counted_only_while_its_tasks_run(tmp_path, python_script):
    """A cgroup target counts what the cgroup's tasks run, on every CPU, and nothing of
    this process's. Oracle: the work (2,000 fresh pages touched by a process in the cgroup,
    3,000 by this one outside it)."""
    if os.geteuid() != 0:
        skip("privilege", "making cgroups and counting whole CPUs takes root")
    mount = cgroup2_mount()
    if mount is None:
        skip("system", "no cgroup mount to count in")
    name = f"counterhal-python-{os.getpid()}"
    directory = os.path.join(mount, name)
    os.mkdir(directory)
    try:
        assert counterhal.cgroup(name) == counterhal.cgroup(directory)
        try:
            group = counterhal.Group("page-faults", counterhal.cgroup(name))
        except counterhal.Error as error:
            skip("system", f"this kernel does not count by cgroup here: {error}")
        command = python_script(CGROUP_WORK)
        with group:
            child = subprocess.Popen([*command, os.path.join(directory, "cgroup.procs")])
            touch(fresh_pages(3000), 3000)
            assert child.wait() == 0
        faults = group.read()["page-faults"].value
        assert 2000 <= faults < 2500, faults
    finally:
        os.rmdir(directory)


INTERRUPTED = r"""
import os, subprocess, sys, time, counterhal
run = {"counterhal": lambda: counterhal.run(["sleep", "3"], "task-clock"),
       "subprocess": lambda: subprocess.run(["sleep", "3"])}[sys.argv[1]]
print("started", flush=True)
try:
    run()
    print("ended")
except KeyboardInterrupt:
    # The command, killed, ends within a second (subprocess leaves it for the collector).
    for _ in range(100):
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.01)
                continue
        except ChildProcessError:
            pass
        print("interrupted, the command ended")
        break
    else:
        print("interrupted, the command runs")
"""


def interrupted_after(which: str) -> tuple:
    """Seconds from a SIGINT sent to a Python process waiting in ``which``'s run of
    ``sleep 3`` (to that process alone, as a notebook's interrupt is sent) to its end, and
    what it printed."""
    program = subprocess.Popen([sys.executable, "-c", INTERRUPTED, which],
                               stdout=subprocess.PIPE, text=True)
    assert program.stdout.readline().strip() == "started"
    time.sleep(0.3)
    sent = time.monotonic()
    program.send_signal(signal.SIGINT)
    said, _ = program.communicate(timeout=30)
    return time.monotonic() - sent, said.strip()


def test_ctrl_c_interrupts_a_command_as_it_interrupts_subprocess():
    """Ctrl-C while ``run()`` waits raises KeyboardInterrupt at once and ends the command,
    as ``subprocess.run`` does (before, run() held it until the command ended: 3 s where
    subprocess.run took 0.56 s). Oracle: subprocess.run of the same command, interrupted the
    same way, and the kernel's list of the process's children (none left running)."""
    theirs, their_said = interrupted_after("subprocess")
    ours, our_said = interrupted_after("counterhal")
    assert their_said == our_said == "interrupted, the command ended", (their_said, our_said)
    print(f"SIGINT to the end: run() {ours:.3f} s, subprocess.run {theirs:.3f} s")
    assert ours <= max(theirs, 0.3) + 0.2, (ours, theirs)


def test_counts_convert_to_plain_data_json_takes():
    """``to_dict()`` gives what ``json.dumps`` takes: each event's value, or with
    ``readings=True`` each reading's fields; an event not counted is None. Oracle: the json
    module's round trip, against the readings themselves."""
    with counterhal.count("page-faults,task-clock") as c:
        touch(fresh_pages(10), 10)
    counts = c.read()
    full = json.loads(json.dumps(counts.to_dict(readings=True)))
    for name, reading in counts.items():
        assert full[name] == {"value": reading.value, "enabled": reading.enabled,
                              "running": reading.running, "scaled": reading.scaled}
        assert full[name] == reading.to_dict()
    assert json.loads(json.dumps(counts.to_dict())) == {n: r.value for n, r in counts.items()}
    result = counterhal.run(["true"], "task-clock,cycles")
    data = json.loads(json.dumps(result.counts.to_dict(readings=True)))
    assert data["task-clock"]["value"] > 0
    if result.counts.get("cycles") is None:
        assert data["cycles"] is None


def test_hints_name_what_python_has():
    """A hint names this module's spelling of what to do (``counterhal.list_metrics()``,
    ``counterhal.events(...)``), not the command's (``counterhal list``) or Rust's. Oracle:
    the hint's own code, run: it lists what the hint says it lists."""
    with pytest.raises(counterhal.InvalidInputError) as caught:
        counterhal.metrics("No_Such_Metric")
    assert "`counterhal.list_metrics()`" in caught.value.hint, caught.value
    with pytest.raises(counterhal.InvalidEventError) as caught:
        counterhal.Group("INST_RETIRED.NOPE", session=counterhal.Session(cpu_model="skl"))
    error = caught.value
    for said in (error.hint, str(error)):
        assert "counterhal list" not in said and "--cpu-model" not in said, said
    code = error.hint.split("`")[1]
    assert code.startswith("counterhal.events("), error.hint
    listed = {event.name for event in eval(code, {"counterhal": counterhal})}
    assert "INST_RETIRED.ANY_P" in listed, sorted(listed)[:20]


NO_TRACEFS = r"""
import os, counterhal
assert "tracefs" not in open("/proc/self/mountinfo").read()
try:
    counterhal.Group("syscalls:sys_enter_getpid")
except counterhal.InvalidEventError as error:
    print(error.hint)
session = counterhal.Session(mount_tracefs=True)
with counterhal.count("syscalls:sys_enter_getpid", session=session) as c:
    for _ in range(1234):
        os.getpid()
print(c["syscalls:sys_enter_getpid"].value)
print(" tracefs " in open("/proc/self/mountinfo").read())
"""


def test_without_tracefs_the_hint_names_the_sessions_option():
    """Where tracefs is mounted nowhere, a tracepoint's hint names
    ``counterhal.Session(mount_tracefs=True)`` (not Rust's ``Setup::mount_tracefs``), and
    that session mounts it and counts. Oracle: the kernel's mount table of a private mount
    namespace (``unshare -m``, tracefs unmounted there), and the work (1,234 getpid calls)."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        skip("privilege", "unmounting tracefs in a mount namespace of its own takes root and unshare")
    script = ("umount -q /sys/kernel/tracing /sys/kernel/debug/tracing 2>/dev/null; "
              'exec "$0" -c "$1"')
    out = subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-c", script,
                          sys.executable, NO_TRACEFS], capture_output=True, text=True,
                         timeout=60, cwd="/")
    if out.returncode != 0 and "tracefs" in out.stderr and "assert" in out.stderr:
        skip("system", f"tracefs stays mounted in a namespace of its own: {out.stderr}")
    assert out.returncode == 0, out.stderr
    hint, counted, mounted = out.stdout.splitlines()
    assert "counterhal.Session(mount_tracefs=True)" in hint and "Setup::" not in hint, hint
    assert int(counted) == 1234 and mounted == "True", out.stdout
