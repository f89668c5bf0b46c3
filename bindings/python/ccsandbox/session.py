"""Session (a running sandbox) and Exec (one command in it)."""
import contextlib
import ctypes
import json
import time

from . import _lib
from . import constants as C
from .context import SESSION_MAILBOX_MAX
from .errors import CcsbError, error_for
from .spec import Spec

_BACKEND_NAMES = {v: k for k, v in C.BACKENDS.items()}
_STATE_NAMES = {C.STATE_CREATED: "created", C.STATE_WARM: "warm", C.STATE_ACTIVE: "active",
                C.STATE_SUSPENDED: "suspended", C.STATE_DESTROYED: "destroyed",
                C.STATE_ERROR: "error"}


def _deadline(timeout):
    if timeout is None:
        return None
    if timeout < 0:
        raise ValueError("timeout: must be >= 0 seconds or None")
    return time.monotonic() + timeout


class _Stream:
    """The events routed to one mailbox: blocking, iterator and async forms."""

    def next_event(self, timeout=None):
        """The next event, or None when the stream has ended or `timeout`
        seconds passed first (timeout=0 only drains what is already here)."""
        box = self._box
        if not box.events:
            self._ctx._wait(box, _deadline(timeout))
        with self._ctx._cond:
            return box.events.popleft() if box.events else None

    def events_now(self):
        """Every event already routed here, without blocking."""
        out = []
        while True:
            ev = self.next_event(timeout=0)
            if ev is None:
                return out
            out.append(ev)

    def __iter__(self):
        """Blocks for each event until the stream ends."""
        while True:
            ev = self.next_event()
            if ev is None:
                return
            yield ev

    def __aiter__(self):
        return self._aiter()

    async def _aiter(self):
        import asyncio
        loop = asyncio.get_running_loop()
        self._ctx._attach_loop(loop)
        try:
            while True:
                ev = await self._ctx._next_async(self._box)
                if ev is None:
                    return
                yield ev
        finally:
            self._ctx._detach_loop(loop)


class ExecResult:
    """How an exec ended. stdout/stderr hold the bytes not already taken by
    iterating over the exec."""

    __slots__ = ("exec_id", "exit_code", "signal", "stdout", "stderr", "killed", "violations")

    def __init__(self, exec_id):
        self.exec_id = exec_id
        self.exit_code = None
        self.signal = 0
        # bytearray while collecting (appending bytes to bytes is quadratic),
        # bytes once the exit arrived.
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.killed = None  # "timeout", "oom", "manual", "host" when we killed it
        self.violations = []

    @property
    def ok(self):
        return self.exit_code == 0 and not self.signal

    def _absorb(self, ev):
        if ev.type == C.EVENT_STDOUT:
            self.stdout += ev.data
        elif ev.type == C.EVENT_STDERR:
            self.stderr += ev.data
        elif ev.type == C.EVENT_KILLED:
            self.killed = ev.kill_reason_name
        elif ev.type == C.EVENT_VIOLATION:
            self.violations.append(ev)
        elif ev.type == C.EVENT_EXIT:
            self.exit_code, self.signal = ev.exit_code, ev.signal
            self.stdout, self.stderr = bytes(self.stdout), bytes(self.stderr)
            return True
        return False

    def __repr__(self):
        return ("ExecResult(exit_code=%r, signal=%r, killed=%r, stdout=%r, stderr=%r, "
                "violations=%d)" % (self.exit_code, self.signal, self.killed, self.stdout,
                                    self.stderr, len(self.violations)))


class Exec(_Stream):
    """One command in a session. Iterate (or `async for`) over its events;
    the stream ends after its exit event. wait() collects the rest."""

    def __init__(self, session, exec_id, box):
        self.session = session
        self.id = exec_id
        self._ctx = session._ctx
        self._box = box
        self._result = None  # what a wait() that timed out had collected

    def _session_call(self, fn, *args, name):
        return self._ctx._call(fn, self.session._ptr(), self.id, *args, name=name)

    def write_stdin(self, data):
        """Writes bytes (or str as UTF-8) to a stdin=True exec; returns the count."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        data = bytes(data)
        return self._session_call(self._ctx._L.ccsb_exec_write_stdin, data, len(data),
                                  name="ccsb_exec_write_stdin")

    def close_stdin(self):
        self._session_call(self._ctx._L.ccsb_exec_close_stdin, name="ccsb_exec_close_stdin")

    def kill(self):
        """Kills the exec's process group; a killed("manual") event follows."""
        self._session_call(self._ctx._L.ccsb_exec_kill, name="ccsb_exec_kill")

    def resize(self, rows, cols):
        self._session_call(self._ctx._L.ccsb_exec_resize_pty, rows, cols,
                           name="ccsb_exec_resize_pty")

    def wait(self, timeout=None):
        """Blocks until the exec exits; returns an ExecResult. Raises
        TimedOut (CCSB_E_TIMEDOUT) when `timeout` seconds pass first; the
        exec keeps running and wait() may be called again."""
        deadline = _deadline(timeout)
        res = self._result = self._result or ExecResult(self.id)
        while True:
            self._ctx._wait(self._box, deadline)
            with self._ctx._cond:
                while self._box.events:
                    if res._absorb(self._box.events.popleft()):
                        self._result = None
                        return res
                if self._box.done:
                    raise CcsbError(C.E_STATE, "exec %d: its events were already consumed "
                                    "or the context was closed" % self.id, "wait")
            if deadline is not None and time.monotonic() >= deadline:
                raise error_for(C.E_TIMEDOUT, "exec %d still running after %ss"
                                % (self.id, timeout), "wait")

    async def wait_async(self):
        """The asyncio form of wait() (no timeout: use asyncio.wait_for)."""
        res = ExecResult(self.id)
        async for ev in self:
            if res._absorb(ev):
                return res
        raise CcsbError(C.E_STATE, "exec %d: the stream ended without an exit event" % self.id,
                        "wait_async")

    def __del__(self):
        ctx = getattr(self, "_ctx", None)
        if ctx is not None:
            ctx._forget((self.session.id, self.id), self._box)

    def __repr__(self):
        return "Exec(session=%r, id=%d)" % (self.session.id, self.id)


def _as_spec(spec, kwargs):
    if spec is None:
        return Spec(**kwargs), True
    if kwargs:
        raise TypeError("launch: pass either a spec or keyword arguments, not both")
    if isinstance(spec, Spec):
        return spec, False
    if isinstance(spec, (str, bytes, dict)):
        return Spec.from_json(spec), True
    raise TypeError("launch: spec must be a Spec, JSON text or a dict")


class Session(_Stream):
    """A running sandbox. Use it as a context manager: leaving the block
    stops every process and frees the session. Iterating over a session
    yields its session-level events (starting, ready, state, killed, error,
    violations not tied to a live exec)."""

    def __init__(self, ctx, spec=None, **kwargs):
        self._start(ctx, spec, kwargs, None)

    @classmethod
    def _launch_exec(cls, ctx, spec, argv, env=None, cwd=None, stdin=False, timeout=None,
                     pty=None, end_session=False):
        """ccsb_launch_exec: the session and its first command in one call.
        Returns (Session, Exec)."""
        self = cls.__new__(cls)
        with _exec_req(ctx._L, argv, env, cwd, stdin, timeout, pty, end_session) as req:
            eid, box = self._start(ctx, spec, {}, req)
        return self, Exec(self, eid, box)

    def _start(self, ctx, spec, kwargs, req):
        """Launches (with `req`: launch_exec) and registers the mailboxes;
        returns (exec id, exec mailbox) for a launch_exec."""
        self._ctx = ctx
        self._L = ctx._L
        self._p = None
        spec, owned = _as_spec(spec, kwargs)
        try:
            wanted = spec.as_dict().get("sessionId") or None
            p = _lib.session_p()
            eid = ctypes.c_uint64(0)
            with ctx._cond:
                ctx._reap_locked()
                if wanted and (wanted, 0) in ctx._boxes:
                    raise error_for(C.E_STATE, "sessionId %r is already live in this context; "
                                    "ids must be unique per context" % wanted, "launch")
                # Holding the lock across launch and registration means no
                # drain can see this session's first events (nor, for a
                # launch_exec, its command's) before their mailboxes exist.
                if req is None:
                    ctx._call(self._L.ccsb_launch, ctx._ptr(), spec._ptr(), ctypes.byref(p),
                              name="ccsb_launch")
                else:
                    ctx._call(self._L.ccsb_launch_exec, ctx._ptr(), spec._ptr(), req,
                              ctypes.byref(p), ctypes.byref(eid), name="ccsb_launch_exec")
                self._p = p
                self.id = _lib.text(self._L.ccsb_session_id(p))
                if (self.id, 0) in ctx._boxes:
                    self._L.ccsb_session_destroy(p)
                    self._p = None
                    raise error_for(C.E_STATE, "sessionId %r is already live in this context"
                                    % self.id, "launch")
                self._box = ctx._register((self.id, 0), SESSION_MAILBOX_MAX)
                if req is None:
                    return None
                return eid.value, ctx._register((self.id, eid.value))
        finally:
            if owned:
                spec.close()

    def _ptr(self):
        if not self._p:
            raise CcsbError(C.E_STATE, "session %r is closed" % getattr(self, "id", "?"))
        return self._p

    @property
    def backend(self):
        """The backend actually running: "native", "none" or "microvm"."""
        return _BACKEND_NAMES.get(self._L.ccsb_session_backend(self._ptr()), "unknown")

    @property
    def state(self):
        return _STATE_NAMES.get(self._L.ccsb_session_state(self._ptr()), "unknown")

    @property
    def error(self):
        return _lib.text(self._L.ccsb_session_error(self._ptr()))

    @property
    def dropped_events(self):
        return self._box.dropped

    def details(self):
        out = ctypes.c_void_p()
        r = self._L.ccsb_session_details_json(self._ptr(), ctypes.byref(out))
        text = _lib.take_owned(out)
        if r:
            raise error_for(r, "cannot describe the session", "ccsb_session_details_json")
        return json.loads(text)

    def exec(self, argv, env=None, cwd=None, stdin=False, timeout=None, pty=None,
             end_session=False):
        """Starts argv (a list; argv[0] is looked up on the session's PATH).
        env: extra variables; stdin=True to feed it with write_stdin;
        timeout: seconds; pty: (rows, cols) to run on a terminal;
        end_session=True: when argv's main process exits, the session ends
        itself (every process of it killed, state "destroyed" after the
        exit event) without a stop() from here: for one-shot runs."""
        L = self._L
        with _exec_req(L, argv, env, cwd, stdin, timeout, pty, end_session) as req:
            eid = ctypes.c_uint64(0)
            with self._ctx._cond:
                self._ctx._call(L.ccsb_exec, self._ptr(), req, ctypes.byref(eid),
                                name="ccsb_exec")
                box = self._ctx._register((self.id, eid.value))
            return Exec(self, eid.value, box)

    def run(self, argv, timeout=None, **kwargs):
        """exec() then wait(); the exec's own timeout is `timeout` too."""
        ex = self.exec(argv, timeout=timeout, **kwargs)
        return ex.wait(None if timeout is None else timeout + 5)

    def stop(self):
        self._ctx._call(self._L.ccsb_session_stop, self._ptr(), name="ccsb_session_stop")

    def suspend(self):
        self._ctx._call(self._L.ccsb_session_suspend, self._ptr(), name="ccsb_session_suspend")

    def resume(self):
        self._ctx._call(self._L.ccsb_session_resume, self._ptr(), name="ccsb_session_resume")

    def close(self):
        """Stops the session if needed and frees it (idempotent)."""
        p, self._p = getattr(self, "_p", None), None
        if p:
            self._L.ccsb_session_destroy(p)
            self._box.done = True
            self._box.wake()
            self._ctx._forget((self.id, 0), self._box)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "Session(id=%r, %s)" % (getattr(self, "id", "?"),
                                       self.state if self._p else "closed")


def _req_check(r, field):
    if r:
        raise error_for(r, "%s: rejected by the library" % field, "exec request")


@contextlib.contextmanager
def _exec_req(L, argv, env, cwd, stdin, timeout, pty, end_session):
    """A ccsb_exec_req for exec() and launch_exec(), freed on leaving."""
    if isinstance(argv, (str, bytes)) or not argv:
        raise TypeError("argv: expected a non-empty list of strings")
    req = _lib.exec_req_p()
    r = L.ccsb_exec_req_new(ctypes.byref(req))
    if r:
        raise error_for(r, "cannot allocate an exec request", "ccsb_exec_req_new")
    try:
        arr = (ctypes.c_char_p * len(argv))(*[_lib.enc(a, "argv[%d]" % i)
                                             for i, a in enumerate(argv)])
        _req_check(L.ccsb_exec_req_set_argv(req, arr, len(argv)), "argv")
        for name, val in (env or {}).items():
            _req_check(L.ccsb_exec_req_set_env(req, _lib.enc(name, "env name"),
                                               _lib.enc(val, "env[%s]" % name)),
                       "env[%s]" % name)
        if cwd is not None:
            _req_check(L.ccsb_exec_req_set_cwd(req, _lib.enc(cwd, "cwd")), "cwd")
        if stdin:
            _req_check(L.ccsb_exec_req_set_stdin(req, C.STDIN_PIPE), "stdin")
        if timeout is not None:
            if timeout <= 0:
                raise ValueError("timeout: must be > 0 seconds")
            _req_check(L.ccsb_exec_req_set_timeout_ms(req, max(1, int(timeout * 1000))),
                       "timeout")
        if pty is not None:
            rows, cols = pty
            _req_check(L.ccsb_exec_req_set_pty(req, rows, cols), "pty")
        if end_session:
            _req_check(L.ccsb_exec_req_set_end_session(req, 1), "end_session")
        yield req
    finally:
        L.ccsb_exec_req_free(req)
