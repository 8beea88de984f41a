"""counterhal's errors as exceptions: one class per kind of error, all ``counterhal.Error``.

Each carries what counterhal said: ``kind`` (``"invalid event"``, ``"not found"``, ...),
``message``, the OS error number ``errno`` where a system call failed, and ``hint``, what to
do about it. ``str(error)`` is the message with the errno and the hint, as the
``counterhal`` command prints it. Where Python has a class for the same failure, the class is
one of its subclasses too: an unknown event is a ``ValueError``, a target that is gone a
``LookupError``, a refusal for lack of privilege a ``PermissionError``.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "Error",
    "UnsupportedError",
    "PermissionDeniedError",
    "NoCounterAvailableError",
    "InvalidEventError",
    "InvalidInputError",
    "DeviceMissingError",
    "BusyError",
    "NotFoundError",
    "NotCountedError",
    "LimitReachedError",
]


class Error(Exception):
    """What counterhal refused or could not do, with its kind, errno and hint."""

    #: The kind of error, as counterhal names it (``"invalid event"``).
    kind: str = "other"
    #: What happened, without the errno and the hint.
    message: str = ""
    #: The OS error number, where a system call failed.
    errno: Optional[int] = None
    #: What to do about it, where known.
    hint: Optional[str] = None


class UnsupportedError(Error):
    """This machine, system or backend cannot do it (no PMU, no such event here)."""


class PermissionDeniedError(Error, PermissionError):
    """The system refused for lack of privilege (``perf_event_paranoid``, capabilities)."""


class NoCounterAvailableError(Error):
    """More events, or more constrained events, than free counters."""


class InvalidEventError(Error, ValueError):
    """An event name, modifier or encoding that means nothing (the hint names the nearest)."""


class InvalidInputError(Error, ValueError):
    """An argument other than an event is not valid, or the group was closed."""


class DeviceMissingError(Error):
    """The device or driver the backend needs is not present."""


class BusyError(Error):
    """The resource exists but is in use."""


class NotFoundError(Error, LookupError):
    """The target (a process, a thread, a CPU, a control group) does not exist, or is gone."""


class NotCountedError(Error):
    """A read came back in a state that carries no values."""


class LimitReachedError(Error):
    """A limit of this process or system was reached (open files: one per event)."""
