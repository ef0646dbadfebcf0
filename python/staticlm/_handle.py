"""The lifetime every owning object of the package shares: close() ends it, and
so do leaving a ``with`` block and garbage collection (where an error, e.g. at
interpreter shutdown, is ignored)."""

from __future__ import annotations

from typing import Any, TypeVar

from . import _lib

_T = TypeVar("_T", bound="Closeable")


class Closeable:
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


class CHandle(Closeable):
    """Owns one C object: `handle` while open (ValueError once closed); close()
    frees it with the library function named by the class's `_free`."""

    _what = "object"  # the name in the closed error
    _free = ""  # e.g. "slm_model_free"
    _handle: Any = None

    @property
    def handle(self) -> int:
        """The C pointer (for ctypes users); ValueError once closed."""
        if self._handle is None:
            raise ValueError(f"the {self._what} is closed")
        return self._handle

    def close(self) -> None:
        if self._handle is not None:
            getattr(_lib.lib, self._free)(self._handle)
            self._handle = None
