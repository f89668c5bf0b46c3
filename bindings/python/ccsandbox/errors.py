"""Exceptions carrying a CCSB_E_* code and the library's message."""
from . import constants as C

_NAMES = {v: "CCSB_" + k for k, v in vars(C).items()
          if k.startswith("E_") and isinstance(v, int)}


class CcsbError(Exception):
    """A failed library call. `code` is the negative CCSB_E_* value, `name`
    its symbol ("CCSB_E_SPEC"), `message` the library's detail text."""

    code = None

    def __init__(self, code, message, call=None):
        self.code = code
        self.name = _NAMES.get(code, "CCSB_E_%d" % code)
        self.message = message
        self.call = call
        where = "%s: " % call if call else ""
        super().__init__("%s%s (%s)" % (where, message or self.name, self.name))


class InvalidArgument(CcsbError):
    code = C.E_INVAL


class OutOfMemory(CcsbError):
    code = C.E_NOMEM


class SpecError(CcsbError):
    code = C.E_SPEC


class Unavailable(CcsbError):
    code = C.E_UNAVAILABLE


class PolicyError(CcsbError):
    code = C.E_POLICY


class StateError(CcsbError):
    code = C.E_STATE


class NotFound(CcsbError):
    code = C.E_NOTFOUND


class IOFailure(CcsbError):
    code = C.E_IO


class Reentrant(CcsbError):
    code = C.E_REENTRANT


class LaunchError(CcsbError):
    code = C.E_LAUNCH


class InternalError(CcsbError):
    code = C.E_INTERNAL


class Unsupported(CcsbError):
    code = C.E_UNSUPPORTED


class TimedOut(CcsbError):
    code = C.E_TIMEDOUT


_BY_CODE = {cls.code: cls for cls in CcsbError.__subclasses__()}


def error_for(code, message, call=None):
    """The most specific exception for a CCSB_E_* code."""
    return _BY_CODE.get(code, CcsbError)(code, message, call)
