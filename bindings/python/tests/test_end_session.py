"""end_session (ccsb_exec_req_set_end_session) through the Python binding:
after such a command's exit the session ends itself: a "destroyed" state
event follows the exit, whatever the command left running is killed, the
session never reads "error", and nothing more runs in it. Without the flag
the session stays warm and keeps what the command left. On the none backend
and, where it works, on bubblewrap."""
import os
import time
import unittest

import ccsandbox

from helpers import children, children_settle, native_launch_or_skip, wait_for

LIMIT_S = 10.0


def stat_of(pid):
    """(state, start time) of a pid, or None once it is gone. The start
    time tells a reused pid from the one we saw."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], fields[19]


def with_arg(marker):
    """{pid: start time} of the live processes that have `marker` as an
    argument (the host sees a sandbox's processes under their host pids)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                args = f.read().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        st = stat_of(int(name))
        if marker.encode() in args and st and st[0] != "Z":
            out[int(name)] = st[1]
    return out


def alive(procs):
    """The processes of `procs` alive now. A zombie is dead: reaping an
    orphan is its new parent's job (on the none backend that is the host's
    init); the tests check separately that no child of this process is
    left."""
    left = set()
    for p, start in procs.items():
        st = stat_of(p)
        if st and st[1] == start and st[0] != "Z":
            left.add(p)
    return left


def still_there(procs, limit_s=LIMIT_S):
    """The processes of `procs` still alive once `limit_s` passed."""
    wait_for(lambda: not alive(procs), limit_s)
    return alive(procs)


def state_event(session, name, limit_s=LIMIT_S):
    """Session-level events up to and including the first state event named
    `name`, or everything that came within `limit_s` when none did."""
    deadline = time.monotonic() + limit_s
    seen = []
    while time.monotonic() < deadline:
        ev = session.next_event(timeout=max(0.0, deadline - time.monotonic()))
        if ev is None:
            break
        seen.append(ev)
        if ev.kind == "state" and ev.state_name == name:
            break
    return seen


class Base(unittest.TestCase):
    spec = {"backend": "none"}

    def setUp(self):
        self.ctx = ccsandbox.Context()
        self.markers = []

    def tearDown(self):
        self.ctx.close()
        # A test that failed must not leave its week-long sleep behind.
        for m in self.markers:
            for pid in with_arg(m):
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass

    def marker(self):
        """A `sleep` argument no other process has: the test finds its
        background process by it, in or out of a sandbox."""
        m = "%d.%d" % (600000 + len(self.markers), os.getpid())
        self.markers.append(m)
        return m

    def launch(self):
        return self.ctx.launch(self.spec)

    def launch_exec(self, argv, **kw):
        return self.ctx.launch_exec(self.spec, argv, **kw)

    def started_background(self, ex, marker):
        """Waits for the command's first line (printed once its background
        sleep is forked) and for that sleep to run; returns it as
        {pid: start time}."""
        ev = ex.next_event(timeout=LIMIT_S)
        self.assertIsNotNone(ev, "the command printed nothing")
        self.assertEqual((ev.kind, ev.data), ("stdout", b"started\n"), ev.as_dict())
        procs = wait_for(lambda: with_arg(marker), LIMIT_S)  # forked, not yet exec'd
        self.assertEqual(len(procs), 1, "the background sleep is not running")
        return procs

    def assert_ends_itself(self, s, ex, procs, before):
        """The command exits 6 with its output; then the session reads
        destroyed without ever reading error; the sleep it left is gone;
        no process of the session is left a child of ours."""
        self.assertEqual(ex.write_stdin("go\n"), 3)
        events = list(ex)
        self.assertEqual(events[-1].kind, "exit", [e.as_dict() for e in events])
        self.assertEqual(events[-1].exit_code, 6)
        self.assertEqual(b"".join(e.data for e in events if e.kind == "stdout"), b"last\n")
        session_events = state_event(s, "destroyed")
        kinds = [(e.kind, e.state_name) for e in session_events]
        self.assertIn(("state", "destroyed"), kinds)
        self.assertLessEqual(events[-1].timestamp_us, session_events[-1].timestamp_us)
        self.assertNotIn(("state", "error"), kinds)
        self.assertNotIn("error", [k for k, _ in kinds], [e.as_dict() for e in session_events])
        self.assertEqual(s.state, "destroyed")
        self.assertEqual(s.error, "")
        self.assertEqual(still_there(procs), set(), "the command's background sleep survived")
        self.assertEqual(children_settle(before, LIMIT_S), set())
        with self.assertRaises(ccsandbox.StateError):
            s.exec(["true"])

    def script(self, marker):
        return ["sh", "-c", "sleep %s & echo started; read go; echo last; exit 6" % marker]

    def test_exec_with_end_session_ends_the_session(self):
        before = children()
        with self.launch() as s:
            self.assertEqual(s.run(["echo", "warm"], timeout=LIMIT_S).stdout, b"warm\n")
            m = self.marker()
            ex = s.exec(self.script(m), stdin=True, end_session=True)
            self.assert_ends_itself(s, ex, self.started_background(ex, m), before)

    def test_launch_exec_with_end_session_is_a_one_shot_run(self):
        before = children()
        m = self.marker()
        s, ex = self.launch_exec(self.script(m), stdin=True, end_session=True)
        with s:
            self.assert_ends_itself(s, ex, self.started_background(ex, m), before)

    def test_other_commands_of_the_session_end_with_it(self):
        with self.launch() as s:
            other = s.exec(["sleep", "300"])
            m = self.marker()
            ex = s.exec(self.script(m), stdin=True, end_session=True)
            procs = self.started_background(ex, m)
            ex.write_stdin("go\n")
            self.assertEqual(ex.wait(timeout=LIMIT_S).exit_code, 6)
            r = other.wait(timeout=LIMIT_S)
            self.assertFalse(r.ok, r)
            self.assertEqual(still_there(procs), set())
            self.assertIn(("state", "destroyed"),
                          [(e.kind, e.state_name) for e in state_event(s, "destroyed")])

    def test_without_end_session_the_session_stays_warm(self):
        m = self.marker()
        for first in (False, True):
            if first:
                s, ex = self.launch_exec(self.script(m), stdin=True)
            else:
                s = self.launch()
                ex = s.exec(self.script(m), stdin=True, end_session=False)
            with s:
                procs = self.started_background(ex, m)
                ex.write_stdin("go\n")
                self.assertEqual(ex.wait(timeout=LIMIT_S).exit_code, 6)
                wait_for(lambda: s.state == "warm", LIMIT_S)
                self.assertEqual(s.state, "warm")
                self.assertEqual(still_there(procs, limit_s=0.2), set(procs),
                                 "the background sleep was killed with no end_session")
                self.assertEqual(s.run(["echo", "again"], timeout=LIMIT_S).stdout, b"again\n")
                kinds = [(e.kind, e.state_name) for e in s.events_now()]
                self.assertNotIn(("state", "destroyed"), kinds)
            # Closing the session is what ends the sleep then.
            self.assertEqual(still_there(procs), set())


class TestNone(Base):
    pass


class TestNative(Base):
    """The same on bubblewrap, where ccsb-init ends the sandbox itself;
    skips (with the reason) where the native backend is not available."""

    spec = {"backend": "native"}

    def launch(self):
        return native_launch_or_skip(self, self.ctx, super().launch)

    def launch_exec(self, argv, **kw):
        return native_launch_or_skip(self, self.ctx, super().launch_exec, argv, **kw)


del Base  # only its subclasses run

if __name__ == "__main__":
    unittest.main()
