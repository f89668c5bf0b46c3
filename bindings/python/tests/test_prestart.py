"""Context.prestart (ccsb_ctx_prestart): an idle bubblewrap started ahead,
which the next native launch takes. A launch after one runs its commands;
each native launch takes one (so at most 4 wait again afterwards, the 5th
call raising StateError); closing the context ends those never taken, and
no bubblewrap process of ours is left."""
import unittest

import ccsandbox
from ccsandbox import constants as C

from helpers import children, launch_native_or_skip, native_or_skip, wait_for

MAX_WAITING = 4  # the library's limit (header: "at most 4 wait")
SETTLE_S = 2.0


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None


def bwrap_children(before):
    """Children not in `before` that are (or, as zombies, were) bubblewrap."""
    return {p for p in children() - before if comm(p) == "bwrap"}


class TestPrestart(unittest.TestCase):
    def setUp(self):
        self.ctx = ccsandbox.Context()

    def tearDown(self):
        self.ctx.close()

    def prestart_or_skip(self):
        try:
            self.ctx.prestart()
        except ccsandbox.Unavailable as e:
            self.skipTest("nothing to prestart on this host: %s" % e)

    def fill(self, n):
        """n more prestarts, which must all be accepted."""
        for i in range(n):
            try:
                self.ctx.prestart()
            except ccsandbox.CcsbError as e:
                self.fail("prestart %d of %d refused: %s" % (i + 1, n, e))

    def assert_full(self):
        with self.assertRaises(ccsandbox.StateError) as cm:
            self.ctx.prestart()
        self.assertEqual(cm.exception.code, C.E_STATE)
        self.assertEqual(cm.exception.call, "ccsb_ctx_prestart")
        self.assertIn("already wait", cm.exception.message)

    def test_a_native_launch_runs_on_the_prestarted_bwrap_and_takes_it(self):
        native_or_skip(self, self.ctx)
        self.prestart_or_skip()
        with launch_native_or_skip(self, self.ctx, session_id="py-prestart") as s:
            self.assertEqual(s.backend, "native")
            r = s.exec(["true"]).wait(timeout=30)
            self.assertEqual((r.exit_code, r.signal, r.killed), (0, 0, None), r.stderr)
        # The launch took the one waiting: 4 fit again, not 3.
        self.fill(MAX_WAITING)
        self.assert_full()

    def test_the_fifth_waiting_prestart_is_refused(self):
        self.prestart_or_skip()
        self.fill(MAX_WAITING - 1)
        self.assert_full()
        # Still full: a refused call adds nothing and frees no slot.
        self.assert_full()

    def test_close_ends_every_untaken_bwrap(self):
        native_or_skip(self, self.ctx)
        before = children()
        self.prestart_or_skip()
        self.fill(MAX_WAITING - 1)
        # Started on the library's thread, without the call waiting for it.
        wait_for(lambda: len(bwrap_children(before)) >= MAX_WAITING, SETTLE_S)
        started = bwrap_children(before)
        self.assertEqual(len(started), MAX_WAITING, "bubblewrap children: %s" % started)
        self.ctx.close()
        # Gone means reaped too: a zombie is still listed as our child.
        wait_for(lambda: not (bwrap_children(before) or started & children()), SETTLE_S)
        self.assertEqual(bwrap_children(before), set(), "bubblewrap left after close")
        self.assertEqual(started & children(), set(), "prestarted children left after close")
        # (the binding's own check for a closed context: a CcsbError)
        with self.assertRaises(ccsandbox.CcsbError) as cm:
            self.ctx.prestart()
        self.assertEqual(cm.exception.code, C.E_STATE)


if __name__ == "__main__":
    unittest.main()
