"""Python bindings for libccsandbox (ctypes, standard library only).

    import ccsandbox
    with ccsandbox.Context() as ctx, ctx.launch(backend="none") as s:
        r = s.exec(["sh", "-c", "echo hi"]).wait(timeout=10)
        print(r.exit_code, r.stdout)
"""
from . import constants
from ._lib import load as load_library
from .context import Context, ProbeResult, probe
from .errors import (CcsbError, InternalError, InvalidArgument, IOFailure, LaunchError,
                     NotFound, OutOfMemory, PolicyError, Reentrant, SpecError, StateError,
                     TimedOut, Unavailable, Unsupported)
from .events import Event
from .session import Exec, ExecResult, Session
from .spec import BindMount, Spec

__all__ = [
    "Context", "ProbeResult", "probe", "Spec", "BindMount", "Session", "Exec", "ExecResult",
    "Event", "CcsbError", "InvalidArgument", "OutOfMemory", "SpecError", "Unavailable",
    "PolicyError", "StateError", "NotFound", "IOFailure", "Reentrant", "LaunchError",
    "InternalError", "Unsupported", "TimedOut", "constants", "load_library", "version",
    "version_number", "strerror", "backend_from_name", "backend_name",
]


def _L():
    from ._lib import lib
    return lib()


def version():
    """The loaded library's version, e.g. "1.0.0"."""
    return _L().ccsb_version().decode()


def version_number():
    return _L().ccsb_version_number()


def strerror(code):
    return _L().ccsb_strerror(code).decode()


def backend_from_name(name):
    """Lenient parse of a stored backend name: None/unknown -> "none",
    "docker" -> "native". Returns the name of the backend."""
    b = _L().ccsb_backend_from_name(name.encode() if name is not None else None)
    return backend_name(b)


def backend_name(backend):
    return _L().ccsb_backend_name(backend).decode()
