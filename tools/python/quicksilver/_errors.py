"""The exceptions of quicksilver: one base class, a subclass per kind of failure.

Every exception raised for a failed engine call is a :class:`Error` carrying
the engine's status name (``"param"``, ``"shape"``, ...), its numeric status
and the engine's message, which names the field or file at fault. Each
subclass also derives from the built-in exception a Python caller would
expect (``ValueError`` for bad parameters and shapes, ``TypeError`` for a
dtype, ``LookupError`` for unknown names, ``MemoryError``), so code written
against the built-ins keeps working.
"""

from __future__ import annotations

from . import _core

__all__ = [
    "Error", "ParameterError", "ShapeError", "DTypeError", "CopyError",
    "UnknownMethodError", "UnknownImplementationError", "UnavailableError",
    "ImplementationError", "OpenCLError", "StoreError", "FileFormatError",
    "OutOfMemoryError", "SizeError", "ConfigurationError", "ExistsError",
    "CancelledError", "ClosedError",
    "STATUS",
]

#: status name -> numeric status, from the C library's table.
STATUS: dict[str, int] = {name: code for code, name, _ in _core.statuses()}


class Error(Exception):
    """A quicksilver call failed.

    Attributes:
        message: the engine's message (names the parameter, input or file).
        status: the numeric status (``quicksilver.STATUS[name]``).
        name: the status's short stable name, e.g. ``"param"``.
    """

    def __init__(self, message: str, status: int | None = None,
                 name: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is None:
            status = STATUS.get(name or "", STATUS["invalid"])
        self.status = status
        self.name = name or _NAMES.get(status, "unknown")

    def __str__(self) -> str:
        return f"{self.message} [{self.name}]"


class ParameterError(Error, ValueError):
    """Unknown, repeated or out-of-range parameter, or an invalid argument."""


class ShapeError(Error, ValueError):
    """An input's shape or number of dimensions does not fit the method."""


class DTypeError(Error, TypeError):
    """An input's dtype cannot be converted to float32 (complex, bool, object...)."""


class CopyError(Error, ValueError):
    """``copy=False`` was given and an input would need a conversion."""


class UnknownMethodError(Error, LookupError):
    """No method of that name (the message suggests the nearest)."""


class UnknownImplementationError(Error, LookupError):
    """No implementation of that name or kind (the message suggests the nearest)."""


class UnavailableError(Error):
    """The implementation exists but cannot run here (e.g. no OpenCL device)."""


class ImplementationError(Error):
    """An implementation failed or disagreed with the serial reference."""


class OpenCLError(ImplementationError):
    """OpenCL runtime, kernel build or device memory failure."""


class StoreError(Error):
    """The timing store (SQLite) failed, is corrupt, busy or of another schema."""


class FileFormatError(Error):
    """Input/output error or malformed file."""


class OutOfMemoryError(Error, MemoryError):
    """Out of memory, or a size past what can be represented."""


class SizeError(Error, OverflowError):
    """A size past what can be represented, or more results waiting than a
    stream holds (take them first)."""


class ConfigurationError(Error):
    """An invalid QUICKSILVER_* environment variable."""


class ExistsError(Error):
    """Something of that name exists already."""


class CancelledError(Error):
    """The call was cancelled by its progress callback (a true return
    value): it stopped early, returned nothing and recorded no timing."""


class ClosedError(Error, ValueError):
    """The engine (or stream) was closed: open another one. A ValueError,
    as Python's own closed files raise."""


_BY_NAME: dict[str, type[Error]] = {
    "invalid": ParameterError,
    "no_memory": OutOfMemoryError,
    "overflow": SizeError,
    "shape": ShapeError,
    "no_method": UnknownMethodError,
    "param": ParameterError,
    "no_impl": UnknownImplementationError,
    "unavailable": UnavailableError,
    "failed": ImplementationError,
    "mismatch": ImplementationError,
    "environment": ConfigurationError,
    "store": StoreError,
    "corrupt": StoreError,
    "busy": StoreError,
    "schema": StoreError,
    "opencl": OpenCLError,
    "build": OpenCLError,
    "device_memory": OpenCLError,
    "io": FileFormatError,
    "format": FileFormatError,
    "exists": ExistsError,
    "cancelled": CancelledError,
}

for _cls in (Error, *_BY_NAME.values(), DTypeError, CopyError, ClosedError):
    _cls.__module__ = "quicksilver"  # as users import them

_NAMES: dict[int, str] = {code: name for name, code in STATUS.items()}


def _register() -> None:
    """Tells the extension which class to raise for each status."""
    mapping: dict[object, type[Error]] = {
        code: _BY_NAME.get(name, Error)
        for name, code in STATUS.items() if name != "ok"}
    mapping["closed"] = ClosedError
    _core._set_errors(mapping)


_register()
