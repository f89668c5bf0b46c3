"""Context.launch_exec (ccsb_launch_exec): the session and its first command
in one call. The command's events arrive with the returned exec id; bad
input raises with the library's message; a launch whose session or command
cannot start leaves no session and no process behind."""
import ctypes
import os
import shutil
import tempfile
import threading
import time
import unittest

import ccsandbox
from ccsandbox import _lib
from ccsandbox import constants as C

from helpers import children, children_settle, count_fds, native_launch_or_skip, native_or_skip


class Base(unittest.TestCase):
    def setUp(self):
        self.ctx = ccsandbox.Context()

    def tearDown(self):
        self.ctx.close()

    def assert_no_session(self, before):
        """Nothing of a failed launch_exec is registered or running."""
        self.assertEqual([k for k in self.ctx._boxes if k[1] == 0], [])
        self.assertEqual(children_settle(before), set())


class TestNoneBackend(Base):
    spec = {"backend": "none"}

    def test_command_events_carry_the_returned_exec_id(self):
        s, ex = self.ctx.launch_exec(dict(self.spec, sessionId="py-le"),
                                     ["sh", "-c", "echo out; echo err >&2; exit 3"])
        with s:
            self.assertIsInstance(s, ccsandbox.Session)
            self.assertIsInstance(ex, ccsandbox.Exec)
            self.assertEqual(s.id, "py-le")
            self.assertGreater(ex.id, 0)
            self.assertIs(ex.session, s)
            events = list(ex)
            self.assertTrue(events)
            for ev in events:
                self.assertEqual((ev.session_id, ev.exec_id), ("py-le", ex.id), ev.as_dict())
            kinds = [ev.kind for ev in events]
            self.assertEqual(kinds[-1], "exit")
            self.assertEqual(b"".join(ev.data for ev in events if ev.kind == "stdout"), b"out\n")
            self.assertEqual(b"".join(ev.data for ev in events if ev.kind == "stderr"), b"err\n")
            self.assertEqual(events[-1].exit_code, 3)
            # The launch's own events land in the session's mailbox, the
            # ready one no later than the command's exit.
            session_events = s.events_now()
            kinds = [ev.kind for ev in session_events]
            self.assertIn("starting", kinds)
            self.assertIn("ready", kinds)
            self.assertTrue(all(ev.exec_id == 0 for ev in session_events))
            ready = session_events[kinds.index("ready")]
            self.assertLessEqual(ready.timestamp_us, events[-1].timestamp_us)

    def test_events_drained_by_another_thread_during_the_call_still_arrive(self):
        """A thread waiting on another session pulls the queue the whole
        time, so the command's output can be popped before launch_exec has
        returned its id; it must still reach the returned Exec."""
        stop = threading.Event()
        with self.ctx.launch(backend="none") as other:
            def drain():
                while not stop.is_set():
                    other.next_event(timeout=0.005)

            t = threading.Thread(target=drain)
            t.start()
            try:
                for i in range(20):
                    s, ex = self.ctx.launch_exec(self.spec, ["echo", str(i)])
                    with s:
                        r = ex.wait(timeout=10)
                        self.assertEqual((r.exit_code, r.stdout), (0, b"%d\n" % i), "round %d" % i)
            finally:
                stop.set()
                t.join(10)

    def test_exec_arguments_reach_the_command(self):
        with tempfile.TemporaryDirectory() as d:
            spec = ccsandbox.Spec(backend="none", bind_mounts=[d])
            s, ex = self.ctx.launch_exec(spec, ["sh", "-c", 'pwd; echo "$GREETING"; tr a-z A-Z'],
                                         env={"GREETING": "hej"}, cwd=d, stdin=True)
            with s:
                self.assertEqual(ex.write_stdin("piped"), 5)
                ex.close_stdin()
                r = ex.wait(timeout=10)
                self.assertEqual(r.exit_code, 0, r.stderr)
                self.assertEqual(r.stdout.decode().split(), [os.path.realpath(d), "hej", "PIPED"])
            spec.close()
        s, ex = self.ctx.launch_exec(self.spec, ["sh", "-c", "stty size"], pty=(33, 101))
        with s:
            self.assertIn(b"33 101", ex.wait(timeout=10).stdout)

    def test_exec_timeout_applies_to_the_first_command(self):
        t0 = time.monotonic()
        s, ex = self.ctx.launch_exec(self.spec, ["sh", "-c", "sleep 30 & sleep 30"], timeout=0.3)
        with s:
            r = ex.wait(timeout=10)
            self.assertLess(time.monotonic() - t0, 5.0)
            self.assertEqual(r.killed, "timeout")

    def test_the_session_runs_more_commands_afterwards(self):
        s, first = self.ctx.launch_exec(self.spec, ["sleep", "30"])
        with s:
            self.assertEqual(s.state, "active")
            second = s.exec(["echo", "second"])
            self.assertNotEqual(second.id, first.id)
            self.assertEqual(second.wait(timeout=10).stdout, b"second\n")
            first.kill()
            self.assertEqual(first.wait(timeout=10).killed, "manual")

    def test_closing_the_session_ends_its_first_command(self):
        before = children()
        s, ex = self.ctx.launch_exec(self.spec, ["sleep", "30"])
        s.close()
        r = ex.wait(timeout=10)
        self.assertEqual(r.killed, "manual")
        self.assertEqual(children_settle(before), set())

    def test_empty_argv_raises_before_anything_starts(self):
        before = children()
        for argv in ([], "sh -c true", None):
            with self.assertRaises(TypeError) as cm:
                self.ctx.launch_exec(self.spec, argv)
            self.assertIn("argv", str(cm.exception))
        self.assert_no_session(before)

    def test_library_refuses_an_empty_request(self):
        """Straight through ctypes: a request without argv is refused by the
        library itself, with its message, and no session comes back."""
        L = self.ctx._L
        spec = ccsandbox.Spec(backend="none")
        req = _lib.exec_req_p()
        self.assertEqual(L.ccsb_exec_req_new(ctypes.byref(req)), 0)
        before = children()
        try:
            p = _lib.session_p()
            eid = ctypes.c_uint64(77)
            with self.assertRaises(ccsandbox.InvalidArgument) as cm:
                self.ctx._call(L.ccsb_launch_exec, self.ctx._ptr(), spec._ptr(), req,
                               ctypes.byref(p), ctypes.byref(eid), name="ccsb_launch_exec")
            self.assertEqual(cm.exception.code, C.E_INVAL)
            self.assertIn("argv: empty", cm.exception.message)
            self.assertFalse(p)
            self.assertEqual(eid.value, 0)
            with self.assertRaises(ccsandbox.InvalidArgument) as cm:
                self.ctx._call(L.ccsb_launch_exec, self.ctx._ptr(), spec._ptr(), None,
                               ctypes.byref(p), ctypes.byref(eid), name="ccsb_launch_exec")
            self.assertIn("req", cm.exception.message)
        finally:
            L.ccsb_exec_req_free(req)
            spec.close()
        self.assert_no_session(before)

    def test_bad_spec_raises_with_the_field_and_leaves_no_session(self):
        before = children()
        with self.assertRaises(ccsandbox.SpecError) as cm:
            self.ctx.launch_exec({"backend": "none", "sessionId": "py-le-bad",
                                  "bindMounts": [{"hostPath": "relative/path"}]}, ["true"])
        self.assertEqual(cm.exception.code, C.E_SPEC)
        self.assertIn("bindMounts[0].hostPath", cm.exception.message)
        spec = ccsandbox.Spec(backend="none", session_id="py-le-bad", bind_mounts=["relative"])
        with self.assertRaises(ccsandbox.SpecError) as cm:
            self.ctx.launch_exec(spec, ["true"])
        self.assertIn("bindMounts[0].hostPath", cm.exception.message)
        self.assertEqual(cm.exception.call, "ccsb_launch_exec")
        spec.close()
        self.assert_no_session(before)
        # The id was never taken.
        s, ex = self.ctx.launch_exec({"backend": "none", "sessionId": "py-le-bad"}, ["true"])
        with s:
            self.assertEqual(ex.wait(timeout=10).exit_code, 0)

    def test_unavailable_backend_leaves_no_session(self):
        before = children()
        with self.assertRaises(ccsandbox.Unavailable) as cm:
            self.ctx.launch_exec({"backend": "microvm"}, ["true"])
        self.assertIn("microvm", cm.exception.message)
        self.assert_no_session(before)

    def test_duplicate_session_id_starts_nothing(self):
        with self.ctx.launch(backend="none", session_id="py-le-twice"):
            before = children()
            with self.assertRaises(ccsandbox.StateError):
                self.ctx.launch_exec({"backend": "none", "sessionId": "py-le-twice"},
                                     ["sleep", "30"])
            self.assertEqual(children_settle(before), set())

    def test_no_fd_leak_over_successes_and_failures(self):
        self.ctx.close()
        before = count_fds()
        for _ in range(5):
            with ccsandbox.Context() as ctx:
                s, ex = ctx.launch_exec(self.spec, ["true"])
                with s:
                    self.assertEqual(ex.wait(timeout=10).exit_code, 0)
                with self.assertRaises(ccsandbox.SpecError):
                    ctx.launch_exec({"backend": "none", "bindMounts": [{"hostPath": "x"}]},
                                    ["true"])
                with self.assertRaises(ccsandbox.Unavailable):
                    ctx.launch_exec({"backend": "microvm"}, ["true"])
        self.assertEqual(count_fds(), before)
        self.ctx = ccsandbox.Context()


class TestNative(Base):
    """The same on bubblewrap; skips (with the reason) where the native
    backend is not available."""

    def launch_exec(self, spec, argv, **kw):
        return native_launch_or_skip(self, self.ctx, self.ctx.launch_exec,
                                     dict(spec, backend="native"), argv, **kw)

    def test_command_runs_in_the_sandbox_with_its_exec_id(self):
        d = tempfile.mkdtemp(prefix="ccsb-py-le-")
        try:
            target = "/usr/ccsb-py-le-denied-%d" % os.getpid()
            s, ex = self.launch_exec({"bindMounts": [{"hostPath": d}], "guestWorkdir": d},
                                     ["sh", "-c", "pwd; echo x > %s; echo ok > f" % target])
            with s:
                self.assertEqual(s.backend, "native")
                events = list(ex)
                self.assertTrue(all(ev.exec_id == ex.id and ev.session_id == s.id
                                    for ev in events))
                self.assertEqual(events[-1].kind, "exit")
                out = b"".join(ev.data for ev in events if ev.kind == "stdout")
                self.assertEqual(out.decode().split(), [d])
                self.assertFalse(os.path.exists(target))
                with open(os.path.join(d, "f")) as f:
                    self.assertEqual(f.read(), "ok\n")
                vs = [ev for ev in events if ev.kind == "violation"]
                vs += [ev for ev in s.events_now() if ev.kind == "violation"]
                self.assertTrue(any(target in (v.target + v.raw) for v in vs),
                                [v.as_dict() for v in vs])
                self.assertEqual(s.exec(["echo", "again"]).wait(timeout=30).stdout, b"again\n")
        finally:
            shutil.rmtree(d)

    def test_command_that_cannot_start_leaves_nothing_running(self):
        """The sandbox starts but the command cannot be handed to it (its
        argv is over the size the sandbox's init accepts): the call fails
        with the library's message, and no session, bubblewrap process or fd
        is left."""
        native_or_skip(self, self.ctx)
        before_fds = count_fds()
        before = children()
        huge = "x" * (5 << 20)
        with self.assertRaises(ccsandbox.CcsbError) as cm:
            self.launch_exec({"sessionId": "py-le-huge"}, ["true", huge])
        self.assertEqual(cm.exception.code, C.E_INVAL, cm.exception)
        self.assertIn("command", cm.exception.message)
        self.assert_no_session(before)
        self.assertEqual(count_fds(), before_fds)
        s, ex = self.launch_exec({"sessionId": "py-le-huge"}, ["true"])
        with s:
            self.assertEqual(ex.wait(timeout=30).exit_code, 0)


if __name__ == "__main__":
    unittest.main()
