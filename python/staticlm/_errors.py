"""Exceptions: every failed C call becomes a StaticlmError (or a subclass per
status) carrying slm_last_error()'s message and the status name."""

from __future__ import annotations

import enum
import sys

from ._lib import lib


class Status(enum.IntEnum):
    """slm_status: what kind of failure a C call reported."""

    OK = 0
    IO = 1
    FORMAT = 2
    UNSUPPORTED = 3
    MODEL = 4
    CONFIG = 5
    INPUT = 6
    CAPACITY = 7
    BUSY = 8
    ABORTED = 9
    INTERNAL = 100


class StaticlmError(Exception):
    """A staticlm call failed.

    Attributes:
        status: the Status the C call returned.
        status_name: its name as slm_status_name() spells it ("io", "capacity", ...).
        message: slm_last_error()'s text, naming the file, value or limit involved.
    """

    def __init__(self, status: int, message: str):
        try:
            self.status: Status | int = Status(status)
        except ValueError:
            self.status = status
        self.status_name: str = (lib.slm_status_name(int(status)) or b"unknown").decode()
        self.message: str = message
        super().__init__(f"{message} [{self.status_name}]" if message else f"[{self.status_name}]")


class IoError(StaticlmError):
    """A file or directory cannot be read (SLM_ERR_IO)."""


class FormatError(StaticlmError):
    """A file is malformed (SLM_ERR_FORMAT)."""


class UnsupportedError(StaticlmError):
    """A valid file asks for something staticlm does not do (SLM_ERR_UNSUPPORTED)."""


class ModelError(StaticlmError):
    """Tensors missing or misshaped, or non-finite logits (SLM_ERR_MODEL)."""


class ConfigError(StaticlmError, ValueError):
    """Invalid settings: a parameter out of range (SLM_ERR_CONFIG)."""


class InputError(StaticlmError, ValueError):
    """Invalid input: empty, a token id out of range, bad UTF-8 (SLM_ERR_INPUT)."""


class CapacityError(StaticlmError):
    """The session's max_seq would be exceeded (SLM_ERR_CAPACITY)."""


class BusyError(StaticlmError):
    """The session is in use by another call (SLM_ERR_BUSY)."""


class AbortedError(StaticlmError):
    """A callback asked to stop (SLM_ERR_ABORTED)."""


class InternalError(StaticlmError):
    """Anything else: out of memory, a bug (SLM_ERR_INTERNAL)."""


_BY_STATUS: dict[int, type[StaticlmError]] = {
    Status.IO: IoError,
    Status.FORMAT: FormatError,
    Status.UNSUPPORTED: UnsupportedError,
    Status.MODEL: ModelError,
    Status.CONFIG: ConfigError,
    Status.INPUT: InputError,
    Status.CAPACITY: CapacityError,
    Status.BUSY: BusyError,
    Status.ABORTED: AbortedError,
    Status.INTERNAL: InternalError,
}


def last_error_message() -> str:
    raw = lib.slm_last_error()
    return raw.decode("utf-8", "replace") if raw else ""


def error(status: int) -> StaticlmError:
    """The exception for a failed call; read right after the call (slm_last_error is per thread)."""
    return _BY_STATUS.get(status, StaticlmError)(status, last_error_message())


def check(status: int) -> None:
    if status != 0:
        raise error(status)


def check_count(n: int) -> int:
    """Calls returning a count return -1 on failure."""
    if n < 0:
        msg = last_error_message()
        # The status is not returned by count calls: the message's kind is
        # unknown here, so such failures are InputError unless the text says.
        raise InputError(Status.INPUT, msg)
    return n


# An exception raised before a callback's own try block — a KeyboardInterrupt
# delivered at the function's first instruction — escapes into ctypes, which
# reports it through sys.unraisablehook and returns an undefined value. The
# callbacks of this package carry a `_staticlm_sink` (on the function, or on
# the object of a bound method) that takes such an exception instead, so the
# call that ran the callback raises it once it returns.
_previous_unraisablehook = sys.unraisablehook


def _unraisablehook(unraisable: "sys.UnraisableHookArgs") -> None:
    obj = unraisable.object
    sink = getattr(obj, "_staticlm_sink", None) or getattr(getattr(obj, "__self__", None), "_staticlm_sink", None)
    if sink is not None and unraisable.exc_value is not None:
        sink(unraisable.exc_value)
        return
    _previous_unraisablehook(unraisable)


sys.unraisablehook = _unraisablehook
