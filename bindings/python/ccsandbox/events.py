"""Events copied out of the library into plain Python objects.

The C event is freed as soon as it is copied, so a Python Event never holds
library memory and can outlive its context.
"""
import ctypes

from . import _lib
from . import constants as C

_TYPE_NAMES = {C.EVENT_STARTING: "starting", C.EVENT_READY: "ready", C.EVENT_STDOUT: "stdout",
               C.EVENT_STDERR: "stderr", C.EVENT_EXIT: "exit", C.EVENT_KILLED: "killed",
               C.EVENT_VIOLATION: "violation", C.EVENT_STATE: "state", C.EVENT_ERROR: "error"}
_STATE_NAMES = {C.STATE_CREATED: "created", C.STATE_WARM: "warm", C.STATE_ACTIVE: "active",
                C.STATE_SUSPENDED: "suspended", C.STATE_DESTROYED: "destroyed",
                C.STATE_ERROR: "error"}
_KILL_NAMES = {C.KILL_TIMEOUT: "timeout", C.KILL_OOM: "oom", C.KILL_MANUAL: "manual",
               C.KILL_HOST: "host"}


class Event:
    """One event. `kind` is the name ("stdout", "exit", ...), `type` the
    CCSB_EVENT_* number. Fields that do not apply to the kind hold their
    neutral value (b"", 0, "", None)."""

    __slots__ = ("type", "session_id", "exec_id", "data", "exit_code", "signal",
                 "kill_reason", "action", "target", "raw", "state", "message",
                 "timestamp_us")

    @classmethod
    def _take(cls, ev):
        """Copies and frees a `ccsb_event *`."""
        L = _lib.lib()
        try:
            self = cls.__new__(cls)
            self.type = L.ccsb_event_type(ev)
            self.session_id = _lib.text(L.ccsb_event_session_id(ev))
            self.exec_id = L.ccsb_event_exec_id(ev)
            n = ctypes.c_size_t(0)
            p = L.ccsb_event_data(ev, ctypes.byref(n))
            self.data = ctypes.string_at(p, n.value) if p and n.value else b""
            self.exit_code = L.ccsb_event_exit_code(ev)
            self.signal = L.ccsb_event_signal(ev)
            self.kill_reason = L.ccsb_event_kill_reason(ev)
            self.action = _lib.text(L.ccsb_event_violation_action(ev))
            self.target = _lib.text(L.ccsb_event_violation_target(ev))
            self.raw = _lib.text(L.ccsb_event_violation_raw(ev))
            st = L.ccsb_event_state(ev)
            self.state = None if st < 0 else st
            self.message = _lib.text(L.ccsb_event_message(ev))
            self.timestamp_us = L.ccsb_event_timestamp_us(ev)
            return self
        finally:
            L.ccsb_event_free(ev)

    @property
    def kind(self):
        return _TYPE_NAMES.get(self.type, "unknown")

    @property
    def state_name(self):
        return _STATE_NAMES.get(self.state, "unknown") if self.state is not None else None

    @property
    def kill_reason_name(self):
        return _KILL_NAMES.get(self.kill_reason) if self.kill_reason else None

    @property
    def text(self):
        """stdout/stderr bytes decoded as UTF-8 (invalid bytes replaced)."""
        return self.data.decode("utf-8", "replace")

    def as_dict(self):
        d = {"type": self.kind, "session": self.session_id, "ts_us": self.timestamp_us}
        if self.exec_id:
            d["exec"] = self.exec_id
        if self.type in (C.EVENT_STDOUT, C.EVENT_STDERR):
            d["data"] = self.data
        elif self.type == C.EVENT_EXIT:
            d["exit_code"], d["signal"] = self.exit_code, self.signal
        elif self.type == C.EVENT_KILLED:
            d["reason"] = self.kill_reason_name
        elif self.type == C.EVENT_VIOLATION:
            d["action"], d["target"], d["raw"] = self.action, self.target, self.raw
        elif self.type == C.EVENT_STATE:
            d["state"] = self.state_name
        if self.message:
            d["message"] = self.message
        return d

    def __repr__(self):
        return "Event(%s)" % ", ".join("%s=%r" % kv for kv in self.as_dict().items())
