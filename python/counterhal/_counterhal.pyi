"""The types of counterhal's extension module, which ``counterhal`` re-exports."""

import os
from types import TracebackType
from typing import (
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

__version__: str

#: Events as ``perf stat -e`` takes them (``"cycles,instructions"``), or a sequence of names.
EventNames = Union[str, Sequence[str]]
#: A ``Target``, a process id, or ``None`` for this thread.
TargetLike = Union["Target", int, None]

_T = TypeVar("_T")
_G = TypeVar("_G", bound="Group")
_M = TypeVar("_M", bound="Metrics")

class Reading:
    """One event's count: value, nanoseconds enabled and running, the scaled estimate."""

    def __init__(self, value: int, enabled: int = 0, running: int = 0) -> None: ...
    @property
    def value(self) -> int:
        """Events counted while the event was on a counter."""
    @property
    def enabled(self) -> int:
        """Nanoseconds the event was enabled."""
    @property
    def running(self) -> int:
        """Nanoseconds the event was on a counter."""
    @property
    def scaled(self) -> Optional[int]:
        """The value extrapolated to the whole time enabled; None where it never ran."""
    @property
    def fraction_running(self) -> Optional[float]:
        """The share of its time enabled the event was counting."""
    @property
    def multiplexed(self) -> bool:
        """Whether the event counted for only part of its time enabled."""
    def to_dict(self) -> Dict[str, Optional[int]]:
        """value, enabled, running and scaled as plain data (what json.dumps takes)."""
    def __sub__(self, earlier: "Reading") -> "Reading": ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class Counts(Mapping[str, Reading]):
    """The counts of a set's events at one read, by the names they were asked by."""

    @overload
    def __getitem__(self, key: str) -> Reading: ...
    @overload
    def __getitem__(self, key: int) -> Reading: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[str]: ...
    def __contains__(self, name: object) -> bool: ...
    def keys(self) -> List[str]: ...  # type: ignore[override]
    def values(self) -> List[Reading]: ...  # type: ignore[override]
    def items(self) -> List[Tuple[str, Reading]]: ...  # type: ignore[override]
    @overload  # type: ignore[override]
    def get(self, name: str) -> Optional[Reading]: ...
    @overload
    def get(self, name: str, default: _T) -> Union[Reading, _T]: ...
    @overload
    def to_dict(self, scaled: bool = False) -> Dict[str, Optional[int]]:
        """Each event's value (its scaled estimate where scaled), by name; None for one not
        counted (what json.dumps takes)."""
    @overload
    def to_dict(
        self, scaled: bool = False, *, readings: bool
    ) -> Dict[str, Union[Optional[int], Dict[str, Optional[int]]]]:
        """With readings=True, each reading's fields (Reading.to_dict()), by name."""
    @property
    def note(self) -> Optional[str]:
        """What counting did on its own (user space only), or None."""
    def __sub__(self, earlier: "Counts") -> "Counts": ...

class Target:
    """Where a group counts (this_thread(), process(pid), cpu(n), cgroup(name), ...)."""

    def __eq__(self, other: object) -> bool: ...

def this_thread() -> Target:
    """The calling thread alone."""

def this_process() -> Target:
    """This process: every thread, and what it creates from now on, summed."""

def process(pid: int) -> Target:
    """A process by its id: every thread, and what it creates from now on, summed."""

def thread(tid: int) -> Target:
    """One thread by its id, alone."""

def cpu(cpu: int) -> Target:
    """Everything that runs on one CPU (system-wide)."""

def cpus(cpus: Union[str, Sequence[int]]) -> Target:
    """Everything that runs on these CPUs ("0-3,8" or numbers), summed."""

def all_cpus() -> Target:
    """Everything that runs on every online CPU, summed."""

def cgroup(
    name: Union[str, "os.PathLike[str]"], cpus: Union[str, Sequence[int], None] = None
) -> Target:
    """What one control group's tasks run (by perf -G's name, or its directory)."""

class Session:
    """The backend and CPU model events are opened with."""

    def __init__(
        self,
        *,
        cpu_model: Optional[str] = None,
        backend: Optional[str] = None,
        mount_tracefs: bool = False,
    ) -> None: ...
    @property
    def backend(self) -> str:
        """The backend's name."""
    @property
    def cpu_model(self) -> Optional[str]:
        """The CPU model names resolve against, or None."""

class Group:
    """Events counted together on a target: start, stop, reset, read, close."""

    def __init__(
        self,
        events: EventNames,
        target: TargetLike = None,
        *,
        session: Optional[Session] = None,
        domain: Optional[str] = None,
        grouped: bool = True,
        inherit: bool = False,
        strict: bool = True,
    ) -> None: ...
    def start(self) -> None:
        """Starts counting (the counts go on from where they were)."""
    def stop(self) -> None:
        """Stops counting; the counts stay readable."""
    def reset(self) -> None:
        """Zeroes the counts and their times."""
    def read(self) -> Counts:
        """The counts now, one reading per event (after close(), those it had then)."""
    def close(self) -> None:
        """Releases the counters, keeping the counts they had."""
    @property
    def closed(self) -> bool: ...
    @property
    def events(self) -> List[str]: ...
    @property
    def note(self) -> Optional[str]: ...
    def __getitem__(self, key: Union[str, int]) -> Reading: ...
    def __enter__(self: _G) -> _G: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

def count(
    events: EventNames,
    target: TargetLike = None,
    *,
    session: Optional[Session] = None,
    domain: Optional[str] = None,
    grouped: bool = True,
    inherit: bool = False,
    strict: bool = True,
) -> Group:
    """A group for one with block: started, then stopped and closed as it ends."""

class MetricValue:
    """One metric's value over the time its set was enabled."""

    name: str
    value: Optional[float]
    unit: str
    threshold: Optional[str]

class Metrics:
    """Metrics by perf's names counted on a target: start, stop, read, close."""

    def __init__(
        self,
        names: EventNames,
        target: TargetLike = None,
        *,
        session: Optional[Session] = None,
        domain: Optional[str] = None,
        grouped: bool = True,
    ) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def read(self) -> Dict[str, MetricValue]: ...
    def close(self) -> None: ...
    @property
    def names(self) -> List[str]: ...
    @property
    def events(self) -> List[str]: ...
    def __getitem__(self, name: str) -> MetricValue: ...
    def __enter__(self: _M) -> _M: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

def metrics(
    names: EventNames,
    target: TargetLike = None,
    *,
    session: Optional[Session] = None,
    domain: Optional[str] = None,
    grouped: bool = True,
) -> Metrics:
    """Metrics for one with block: started, then stopped and closed as it ends."""

class Run:
    """How a counted command ended and what it counted."""

    @property
    def counts(self) -> Counts: ...
    @property
    def returncode(self) -> int: ...
    @property
    def pid(self) -> int: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def user_time(self) -> float: ...
    @property
    def system_time(self) -> float: ...
    @property
    def note(self) -> Optional[str]: ...
    def __getitem__(self, key: Union[str, int]) -> Reading: ...

def run(
    args: Sequence[Union[str, "os.PathLike[str]"]],
    events: Optional[EventNames] = None,
    *,
    session: Optional[Session] = None,
    domain: Optional[str] = None,
    grouped: bool = False,
    cwd: Union[str, "os.PathLike[str]", None] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Run:
    """Runs a command with events counted from its exec to its end, and waits for it
    (Ctrl-C stops the command and raises KeyboardInterrupt)."""

class Event:
    """One event as counterhal list lists it."""

    name: str
    section: str
    description: str
    usable: bool
    reason: Optional[str]

def events(pattern: str = "", *, all: bool = False, session: Optional[Session] = None) -> List[Event]:
    """The events this machine counts (all=True: the others too)."""

class Metric:
    """One metric of the CPU model's tables or a portable one."""

    name: str
    groups: List[str]
    expression: str
    scale: float
    unit: str
    model: Optional[str]
    events: List[str]

def list_metrics(pattern: str = "", *, session: Optional[Session] = None) -> List[Metric]:
    """The metrics metrics() takes with the session's CPU model."""
