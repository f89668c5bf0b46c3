"""Context: owns the library context, its event queue and the routing of
events to the Session and Exec objects that wait for them.

Threading model. The library runs its loop on its own thread and queues
events; Python never registers a library callback, so no Python code ever
runs on a library thread. Events are pulled with ccsb_ctx_next_event by
whichever Python thread (or asyncio reader) needs one and routed into
per-session and per-exec mailboxes under one lock. At most one thread
blocks in poll() on the context's fd at a time; the others wait on a
condition variable that every drain signals, so an event pulled by one
thread for another is never missed.
"""
import collections
import ctypes
import select
import threading
import time

from . import _lib
from . import constants as C
from .errors import CcsbError, error_for
from .events import Event

_ERRBUF = 1024
# A poll never blocks longer than this, so close() and deadlines are honoured
# even when the fd is never signalled.
_POLL_SLICE_S = 0.25
# Session-level mailboxes are bounded (a host that never reads them must not
# grow without limit); the oldest events are dropped and counted.
SESSION_MAILBOX_MAX = 4096

_OUTPUT = (C.EVENT_STDOUT, C.EVENT_STDERR)


class _Mailbox:
    __slots__ = ("events", "done", "futures", "dropped", "maxlen")

    def __init__(self, maxlen=None):
        self.events = collections.deque()
        self.done = False          # no further events will be routed here
        self.futures = []          # (loop, future) of async waiters
        self.dropped = 0
        self.maxlen = maxlen

    def put(self, ev):
        if self.maxlen is not None and len(self.events) >= self.maxlen:
            self.events.popleft()
            self.dropped += 1
        self.events.append(ev)
        self.wake()

    def wake(self):
        futures, self.futures = self.futures, []
        for loop, fut in futures:
            try:
                loop.call_soon_threadsafe(_resolve, fut)
            except RuntimeError:
                pass  # that loop is closed; nobody is waiting any more


def _resolve(fut):
    if not fut.done():
        fut.set_result(None)


class ProbeResult:
    """What this host offers (values copied; no library memory held)."""

    def __init__(self, L, pr):
        self.platform = _lib.text(L.ccsb_probe_platform(pr))
        self.mechanism = _lib.text(L.ccsb_probe_mechanism(pr))
        self.available = bool(L.ccsb_probe_available(pr))
        self.requires_install = bool(L.ccsb_probe_requires_install(pr))
        self.note = _lib.text(L.ccsb_probe_note(pr))
        self.hint = _lib.text(L.ccsb_probe_hint(pr))
        self.missing_packages = _lib.text(L.ccsb_probe_missing_packages(pr)).split()
        self.microvm_available = bool(L.ccsb_probe_microvm_available(pr))
        self.json = _owned(L, L.ccsb_probe_to_json, "ccsb_probe_to_json", pr)
        self._startup = {d: _owned(L, L.ccsb_probe_startup_message,
                                   "ccsb_probe_startup_message", pr, d) for d in (0, 1)}

    def startup_message(self, disabled=False):
        """The host's one-line startup message ("agent sandbox ON (...)")."""
        return self._startup[1 if disabled else 0]

    def __repr__(self):
        return ("ProbeResult(platform=%r, mechanism=%r, available=%r, note=%r)"
                % (self.platform, self.mechanism, self.available, self.note))


def _owned(L, fn, name, *args):
    out = ctypes.c_void_p()
    r = fn(*args, ctypes.byref(out))
    text = _lib.take_owned(out)
    if r:
        raise error_for(r, "cannot produce the text", name)
    return text


class Context:
    """A library context whose event loop runs on a library thread.

    `library` is an explicit path to libccsandbox.so.1 (otherwise
    $CCSB_LIBRARY, the build tree, then the system loader)."""

    def __init__(self, library=None):
        self._L = _lib.load(library) if library else _lib.lib()
        self._p = _lib.ctx_p()
        err = ctypes.create_string_buffer(_ERRBUF)
        r = self._L.ccsb_ctx_new(ctypes.byref(self._p), err, _ERRBUF)
        if r:
            self._p = None
            raise error_for(r, _lib.text(err.value), "ccsb_ctx_new")
        self._fd = self._L.ccsb_ctx_get_fd(self._p)
        self._cond = threading.Condition(threading.RLock())
        self._polling = False
        self._boxes = {}
        # Keys of mailboxes whose owner was garbage collected; __del__ must not
        # take the lock (it can run inside a locked section), so it only
        # appends here and the next drain forgets them.
        self._dead = collections.deque()
        self._readers = {}
        self.dropped_events = 0

    # -- plumbing used by Session and Exec ---------------------------------

    def _ptr(self):
        if not self._p:
            raise CcsbError(C.E_STATE, "the context is closed")
        return self._p

    def _call(self, fn, *args, name, what=None):
        """Runs a fallible context-bound call and raises with the context's
        message. The message is read under the lock because the library keeps
        only the last one per context."""
        with self._cond:
            self._ptr()
            r = fn(*args)
            if r < 0:
                msg = _lib.text(self._L.ccsb_ctx_errmsg(self._p)) or what or ""
                raise error_for(r, msg, name)
            return r

    def _register(self, key, maxlen=None):
        box = _Mailbox(maxlen)
        self._boxes[key] = box
        return box

    def _forget(self, key, box):
        self._dead.append((key, box))

    def _reap_locked(self):
        while self._dead:
            key, box = self._dead.popleft()
            if self._boxes.get(key) is box:
                del self._boxes[key]

    def _drain_locked(self):
        self._reap_locked()
        if not self._p:
            return
        got = False
        while True:
            evp = _lib.event_p()
            r = self._L.ccsb_ctx_next_event(self._p, ctypes.byref(evp))
            if r == C.E_AGAIN:
                break
            if r:
                raise error_for(r, "cannot pop an event", "ccsb_ctx_next_event")
            self._route(Event._take(evp))
            got = True
        if got:
            self._cond.notify_all()

    def _route(self, ev):
        key = (ev.session_id, ev.exec_id)
        box = self._boxes.get(key)
        if box is None and ev.exec_id and ev.type not in _OUTPUT:
            # An exec nobody holds any more (or a late violation after its
            # exit): the session still learns about it.
            box = self._boxes.get((ev.session_id, 0))
        if box is None:
            self.dropped_events += 1
            return
        box.put(ev)
        if ev.exec_id and ev.type == C.EVENT_EXIT and key in self._boxes:
            box.done = True
            del self._boxes[key]
        elif not ev.exec_id and ev.type == C.EVENT_STATE and ev.state == C.STATE_DESTROYED:
            box.done = True  # stays registered: late events still land

    def _wait(self, box, deadline):
        """Blocks until `box` has an event, is done, or `deadline`
        (time.monotonic() value or None) passes. Returns True if it has one."""
        with self._cond:
            while True:
                self._drain_locked()
                if box.events:
                    return True
                if box.done or not self._p:
                    return False
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                slice_s = _POLL_SLICE_S if remaining is None else min(remaining, _POLL_SLICE_S)
                if self._polling:
                    self._cond.wait(slice_s)
                    continue
                self._polling = True
                fd = self._fd
                self._cond.release()
                try:
                    p = select.poll()
                    p.register(fd, select.POLLIN)
                    p.poll(int(slice_s * 1000) + 1)
                finally:
                    self._cond.acquire()
                    self._polling = False
                    self._cond.notify_all()

    # -- asyncio ----------------------------------------------------------

    def _attach_loop(self, loop):
        with self._cond:
            self._ptr()
            n = self._readers.get(loop, 0)
            if n == 0:
                loop.add_reader(self._fd, self._on_readable)
            self._readers[loop] = n + 1

    def _detach_loop(self, loop):
        with self._cond:
            n = self._readers.get(loop, 0) - 1
            if n > 0:
                self._readers[loop] = n
                return
            self._readers.pop(loop, None)
            if self._p and not loop.is_closed():
                loop.remove_reader(self._fd)

    def _on_readable(self):
        with self._cond:
            self._drain_locked()

    async def _next_async(self, box):
        import asyncio
        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                self._drain_locked()
                if box.events:
                    return box.events.popleft()
                if box.done or not self._p:
                    return None
                fut = loop.create_future()
                box.futures.append((loop, fut))
            await fut

    # -- public -----------------------------------------------------------

    @property
    def fd(self):
        """The context's pollable fd (readable while events are queued)."""
        self._ptr()
        return self._fd

    def probe(self):
        """Probes the host once per context (cached by the library)."""
        pr = _lib.probe_p()
        self._call(self._L.ccsb_probe, self._ptr(), ctypes.byref(pr), name="ccsb_probe")
        return ProbeResult(self._L, pr)

    def prestart(self):
        """Starts one sandbox process ahead for the next native launch of
        this context (ccsb_ctx_prestart): on Linux an idle bubblewrap, so
        that launch skips bwrap's exec. Returns at once (the library's
        thread starts it). Each native launch takes one; at most 4 wait
        (then StateError). Unavailable where the native backend has nothing
        to start ahead (macOS). close() ends those never taken."""
        self._call(self._L.ccsb_ctx_prestart, self._ptr(), name="ccsb_ctx_prestart")

    def launch(self, spec=None, **kwargs):
        """Starts a session from a Spec, a JSON string, a dict, or keyword
        arguments (Spec's). Returns once it is warm."""
        from .session import Session
        return Session(self, spec, **kwargs)

    def launch_exec(self, spec, argv, env=None, cwd=None, stdin=False, timeout=None, pty=None,
                    end_session=False):
        """launch() and Session.exec() as one call: the command goes out with
        the launch and starts as soon as the sandbox is ready. `spec` is a
        Spec, JSON text, a dict or None (the defaults); the other arguments
        are exec()'s (end_session=True for a one-shot run: the session ends
        itself when the command does). Returns (Session, Exec). Either both
        exist, or the call raises and nothing is left running."""
        from .session import Session
        return Session._launch_exec(self, spec, argv, env=env, cwd=cwd, stdin=stdin,
                                    timeout=timeout, pty=pty, end_session=end_session)

    def close(self):
        """Stops every session of the context and frees it."""
        with self._cond:
            p, self._p = self._p, None
            for loop in list(self._readers):
                if not loop.is_closed():
                    try:
                        loop.remove_reader(self._fd)
                    except RuntimeError:
                        pass
            self._readers.clear()
            for box in self._boxes.values():
                box.done = True
                box.wake()
            self._cond.notify_all()
        if p:
            self._L.ccsb_ctx_free(p)

    def __del__(self):
        if getattr(self, "_p", None):
            self._L.ccsb_ctx_free(self._p)
            self._p = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def probe(library=None):
    """Probes this host with a short-lived context."""
    with Context(library) as ctx:
        return ctx.probe()
