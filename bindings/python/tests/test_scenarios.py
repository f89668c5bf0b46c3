"""The C integration scenarios, through the Python binding: probe; launch;
exec with stdout/stderr/exit; timeout; violation event from a denied write
(native); denied egress (native + egress)."""
import asyncio
import os
import shutil
import signal
import tempfile
import threading
import time
import unittest

import ccsandbox
from ccsandbox import constants as C

from helpers import count_fds, launch_native_or_skip


class Base(unittest.TestCase):
    def setUp(self):
        self.ctx = ccsandbox.Context()

    def tearDown(self):
        self.ctx.close()


class TestProbe(Base):
    def test_probe_reports_the_host(self):
        pr = self.ctx.probe()
        self.assertIn(pr.platform, ("linux", "wsl2", "macos", "other"))
        self.assertIn(pr.mechanism, ("bubblewrap", "seatbelt", "none"))
        self.assertTrue(pr.note)
        self.assertIn('"platform"', pr.json)
        if pr.available:
            self.assertTrue(pr.startup_message().startswith("agent sandbox ON ("))
        else:
            self.assertTrue(pr.hint)
            self.assertTrue(pr.startup_message().startswith("no OS-native agent sandbox"))
        self.assertEqual(pr.startup_message(disabled=True),
                         "agent sandbox DISABLED by --sandbox off")

    def test_module_probe_matches_context_probe(self):
        a, b = ccsandbox.probe(), self.ctx.probe()
        self.assertEqual((a.platform, a.mechanism, a.available),
                         (b.platform, b.mechanism, b.available))


class TestSpec(unittest.TestCase):
    def test_kwargs_reach_the_library(self):
        with tempfile.TemporaryDirectory() as d:
            s = ccsandbox.Spec(session_id="py-spec", backend="none", mode="review",
                               bind_mounts=[d, (d, "/guest", True)], guest_workdir=d,
                               egress_allow=["*.example.com"], env={"LANG": "C.UTF-8"},
                               deny_write_globs=["*.key"], timeout_ms=1234, pids_max=64,
                               upstream_proxy="http://127.0.0.1:3128")
            j = s.as_dict()
            self.assertEqual(j["sessionId"], "py-spec")
            self.assertEqual(j["backend"], "none")
            self.assertEqual(j["mode"], "review")
            self.assertEqual(j["bindMounts"][1], {"hostPath": d, "guestPath": "/guest",
                                                  "readOnly": True})
            self.assertIn("*.example.com", j["egressAllowlist"])
            self.assertEqual(j["env"]["LANG"], "C.UTF-8")
            self.assertEqual(j["limits"]["timeoutMs"], 1234)
            self.assertEqual(j["upstreamProxy"], "http://127.0.0.1:3128")
            s.validate()
            again = ccsandbox.Spec.from_json(s.to_json())
            self.assertEqual(again.as_dict(), j)

    def test_bad_json_names_the_field(self):
        with self.assertRaises(ccsandbox.SpecError) as cm:
            ccsandbox.Spec.from_json({"bindMounts": [{"hostPath": "relative"}]})
        self.assertEqual(cm.exception.code, C.E_SPEC)
        self.assertEqual(cm.exception.name, "CCSB_E_SPEC")
        self.assertIn("bindMounts[0].hostPath", cm.exception.message)

    def test_validate_names_the_field(self):
        s = ccsandbox.Spec(bind_mounts=["relative/path"])
        with self.assertRaises(ccsandbox.SpecError) as cm:
            s.validate()
        self.assertIn("bindMounts[0].hostPath", str(cm.exception))

    def test_bad_kwargs(self):
        with self.assertRaises(TypeError):
            ccsandbox.Spec(no_such_field=1)
        with self.assertRaises(ValueError):
            ccsandbox.Spec(backend="docker-ish")
        with self.assertRaises(ValueError):
            ccsandbox.Spec(timeout_ms=-1)
        with self.assertRaises(ValueError):
            ccsandbox.Spec(session_id="a\0b")

    def test_check_host(self):
        s = ccsandbox.Spec(egress_allow=["*.example.com"])
        ok, why = s.check_host("api.example.com:443")
        self.assertTrue(ok)
        self.assertIn("*.example.com", why)
        ok, why = s.check_host("example.com")
        self.assertFalse(ok)
        self.assertTrue(why)


class TestNoneBackend(Base):
    def launch(self, **kw):
        return self.ctx.launch(backend="none", **kw)

    def test_launch_reports_backend_state_and_events(self):
        with self.launch(session_id="py-launch") as s:
            self.assertEqual(s.id, "py-launch")
            self.assertEqual(s.backend, "none")
            self.assertEqual(s.state, "warm")
            kinds = []
            while True:
                ev = s.next_event(timeout=0)
                if ev is None:
                    break
                self.assertEqual(ev.session_id, "py-launch")
                kinds.append(ev.kind)
            self.assertIn("starting", kinds)
            self.assertIn("ready", kinds)
            self.assertLess(kinds.index("starting"), kinds.index("ready"))
            self.assertEqual(s.details()["backend"], "none")
        self.assertEqual(repr(s), "Session(id='py-launch', closed)")

    def test_exec_stdout_stderr_exit(self):
        with self.launch() as s:
            r = s.exec(["sh", "-c", "echo out; echo err >&2; exit 3"]).wait(timeout=10)
            self.assertEqual(r.exit_code, 3)
            self.assertEqual(r.signal, 0)
            self.assertEqual(r.stdout, b"out\n")
            self.assertEqual(r.stderr, b"err\n")
            self.assertIsNone(r.killed)
            self.assertFalse(r.ok)

    def test_iterating_an_exec_yields_its_events_in_order(self):
        with self.launch() as s:
            ex = s.exec(["sh", "-c", "echo a; echo b >&2; exit 0"])
            kinds = [ev.kind for ev in ex]
            self.assertEqual(kinds[-1], "exit")
            self.assertIn("stdout", kinds)
            self.assertIn("stderr", kinds)
            self.assertIsNone(ex.next_event(timeout=0))

    def test_timeout_kills(self):
        with self.launch() as s:
            t0 = time.monotonic()
            r = s.exec(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.3).wait(timeout=10)
            self.assertLess(time.monotonic() - t0, 3.0)
            self.assertEqual(r.killed, "timeout")
            self.assertEqual(r.signal, signal.SIGKILL)
            self.assertEqual(r.exit_code, -1)

    def test_wait_timeout_raises_and_can_resume(self):
        with self.launch() as s:
            ex = s.exec(["sh", "-c", "echo early; sleep 0.5; echo late"])
            with self.assertRaises(ccsandbox.TimedOut) as cm:
                ex.wait(timeout=0.1)
            self.assertEqual(cm.exception.code, C.E_TIMEDOUT)
            r = ex.wait(timeout=10)
            self.assertEqual(r.stdout, b"early\nlate\n")

    def test_stdin_pipe_and_kill(self):
        with self.launch() as s:
            ex = s.exec(["tr", "a-z", "A-Z"], stdin=True)
            self.assertEqual(ex.write_stdin("hello"), 5)
            ex.close_stdin()
            self.assertEqual(ex.wait(timeout=10).stdout, b"HELLO")
            ex = s.exec(["sleep", "30"])
            ex.kill()
            r = ex.wait(timeout=10)
            self.assertEqual(r.killed, "manual")
            with self.assertRaises(ccsandbox.NotFound) as cm:
                s._ctx._call(s._L.ccsb_exec_close_stdin, s._ptr(), 9999,
                             name="ccsb_exec_close_stdin")
            self.assertEqual(cm.exception.code, C.E_NOTFOUND)

    def test_env_cwd_and_pty(self):
        with tempfile.TemporaryDirectory() as d, self.launch(bind_mounts=[d]) as s:
            r = s.exec(["sh", "-c", 'pwd; echo "$GREETING"'], env={"GREETING": "hej"},
                       cwd=d).wait(timeout=10)
            self.assertEqual(r.stdout.decode().split(), [os.path.realpath(d), "hej"])
            r = s.exec(["sh", "-c", "stty size"], pty=(33, 101)).wait(timeout=10)
            self.assertIn(b"33 101", r.stdout)

    def test_concurrent_waits_from_threads_each_get_their_own_events(self):
        with self.launch() as s:
            execs = [s.exec(["sh", "-c", "sleep 0.%d; echo %d" % (i % 3, i)]) for i in range(6)]
            results = [None] * len(execs)

            def wait(i):
                results[i] = execs[i].wait(timeout=20)

            threads = [threading.Thread(target=wait, args=(i,)) for i in range(len(execs))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            for i, r in enumerate(results):
                self.assertIsNotNone(r, "exec %d never finished" % i)
                self.assertEqual(r.stdout, b"%d\n" % i)
                self.assertEqual(r.exit_code, 0)

    def test_asyncio_reads_through_the_fd(self):
        async def main():
            with self.launch() as s:
                a = s.exec(["sh", "-c", "sleep 0.2; echo slow"])
                b = s.exec(["sh", "-c", "echo fast"])
                got = []

                async def collect(ex):
                    out = b""
                    async for ev in ex:
                        got.append((ex.id, ev.kind))
                        if ev.kind == "stdout":
                            out += ev.data
                    return out

                outs = await asyncio.wait_for(asyncio.gather(collect(a), collect(b)), 10)
                self.assertEqual(outs, [b"slow\n", b"fast\n"])
                self.assertEqual([k for i, k in got if i == a.id][-1], "exit")
                r = await asyncio.wait_for(s.exec(["sh", "-c", "exit 7"]).wait_async(), 10)
                self.assertEqual(r.exit_code, 7)
            # The reader is removed once nobody iterates.
            self.assertEqual(self.ctx._readers, {})

        asyncio.run(main())

    def test_stopped_session_rejects_exec_with_the_library_message(self):
        with self.launch() as s:
            ex = s.exec(["sleep", "30"])
            s.stop()
            self.assertEqual(s.state, "destroyed")
            r = ex.wait(timeout=10)
            self.assertEqual(r.killed, "manual")
            with self.assertRaises(ccsandbox.StateError) as cm:
                s.exec(["true"])
            self.assertEqual(cm.exception.code, C.E_STATE)
            self.assertIn("destroyed", cm.exception.message)
            kinds = [ev.kind for ev in s]  # the session stream ends after destroy
            self.assertIn("state", kinds)

    def test_microvm_never_falls_back(self):
        with self.assertRaises(ccsandbox.Unavailable) as cm:
            self.ctx.launch(backend="microvm")
        self.assertEqual(cm.exception.code, C.E_UNAVAILABLE)
        self.assertIn("microvm", cm.exception.message)

    def test_invalid_spec_launches_nothing(self):
        with self.assertRaises(ccsandbox.SpecError) as cm:
            self.ctx.launch(backend="none", bind_mounts=["relative/path"])
        self.assertIn("bindMounts[0].hostPath", cm.exception.message)

    def test_duplicate_session_id_is_refused(self):
        with self.launch(session_id="twice"):
            with self.assertRaises(ccsandbox.StateError):
                self.launch(session_id="twice")
        with self.launch(session_id="twice") as s:  # free again after close
            self.assertEqual(s.id, "twice")

    def test_no_fd_leak_over_many_lifecycles(self):
        self.ctx.close()
        before = count_fds()
        for _ in range(5):
            with ccsandbox.Context() as ctx, ctx.launch(backend="none") as s:
                self.assertEqual(s.run(["true"], timeout=10).exit_code, 0)
        self.assertEqual(count_fds(), before)
        self.ctx = ccsandbox.Context()


class TestNative(Base):
    """Scenarios that need real isolation; they skip (with the reason) where
    the native backend or the egress proxies are not available."""

    def test_denied_write_is_a_violation_event(self):
        d = tempfile.mkdtemp(prefix="ccsb-py-")
        try:
            s = launch_native_or_skip(self, self.ctx, bind_mounts=[d], guest_workdir=d)
            with s:
                target = "/usr/ccsb-py-denied-%d" % os.getpid()
                r = s.exec(["sh", "-c", "echo x > %s" % target]).wait(timeout=30)
                self.assertNotEqual(r.exit_code, 0)
                self.assertFalse(os.path.exists(target))
                vs = r.violations + [ev for ev in s.events_now() if ev.kind == "violation"]
                self.assertTrue(vs, "no violation event; stderr was %r" % r.stderr)
                self.assertTrue(any(target in (v.target + v.raw) for v in vs),
                                [v.as_dict() for v in vs])
                self.assertTrue(all(v.action for v in vs))
        finally:
            shutil.rmtree(d)

    def test_denied_egress_is_refused_with_a_violation(self):
        s = launch_native_or_skip(self, self.ctx)
        with s:
            probe = s.exec(["sh", "-c", 'echo "${HTTP_PROXY:-}"']).wait(timeout=30)
            proxy = probe.stdout.decode().strip()
            if not proxy:
                self.skipTest("egress proxies not in this build (no HTTP_PROXY in the sandbox)")
            if not shutil.which("python3", path="/usr/bin:/bin"):
                self.skipTest("no /usr/bin/python3 to act as the client in the sandbox")
            client = (
                "import os,socket,urllib.parse as u\n"
                "p=u.urlsplit(os.environ['HTTP_PROXY'])\n"
                "c=socket.create_connection((p.hostname,p.port),5)\n"
                "c.sendall(b'CONNECT ccsb-denied.invalid:443 HTTP/1.1\\r\\n"
                "Host: ccsb-denied.invalid:443\\r\\n\\r\\n')\n"
                "print(c.recv(200).split(b'\\r\\n')[0].decode())\n")
            r = s.exec(["/usr/bin/python3", "-c", client]).wait(timeout=30)
            self.assertEqual(r.exit_code, 0, r.stderr)
            self.assertIn(" 403", r.stdout.decode())
            vs = r.violations + [ev for ev in s.events_now() if ev.kind == "violation"]
            self.assertTrue(any(v.action == "network-outbound" and
                                "ccsb-denied.invalid" in v.target for v in vs),
                            [v.as_dict() for v in vs])


if __name__ == "__main__":
    unittest.main()
