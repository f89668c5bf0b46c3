"""Shared fixtures for the binding tests: locating the source tree, the
native backend's availability (tests that need it skip with the reason),
and what this process holds (fds, child processes)."""
import os
import re
import time

import ccsandbox

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("CCSB_SOURCE_ROOT") or os.path.normpath(
    os.path.join(HERE, "..", "..", ".."))
HEADERS = [os.path.join(SOURCE_ROOT, "include", "ccsandbox", h)
           for h in ("ccsandbox.h", "ccsandbox-libevent.h")]


def header_text():
    """Both public headers, concatenated."""
    text = ""
    for h in HEADERS:
        with open(h, encoding="utf-8") as f:
            text += f.read()
    return text


def header_constants():
    """Every `#define CCSB_NAME <integer>` of the public header."""
    out = {}
    for name, val in re.findall(r"^#define (CCSB_[A-Z0-9_]+) (-?\d+)\b", header_text(), re.M):
        out[name] = int(val)
    return out


def header_functions():
    return set(re.findall(r"CCSB_API [^;(]*?\b(ccsb_[a-z0-9_]+)\s*\(", header_text()))


def native_or_skip(test, ctx):
    """Skips `test` unless the native backend works on this host."""
    pr = ctx.probe()
    if not pr.available:
        test.skipTest("native backend unavailable here: %s" % (pr.hint or pr.note))
    return pr


def native_launch_or_skip(test, ctx, launch, *args, **kwargs):
    """launch(*args, **kwargs), a native launch (or launch_exec); skips
    `test` where the native backend does not work here or is not in this
    build."""
    native_or_skip(test, ctx)
    try:
        return launch(*args, **kwargs)
    except (ccsandbox.Unavailable, ccsandbox.Unsupported) as e:
        test.skipTest("native backend not in this build: %s" % e)


def launch_native_or_skip(test, ctx, **kwargs):
    return native_launch_or_skip(test, ctx, ctx.launch, backend="native", **kwargs)


def count_fds():
    return len(os.listdir("/proc/self/fd"))


def children():
    """Pids of this process's children (every thread's: the library forks
    from its loop thread, and its children move to another thread of ours
    when that one ends)."""
    out = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                out.update(int(p) for p in f.read().split())
        except FileNotFoundError:
            pass  # that thread ended meanwhile
    return out


def wait_for(cond, limit_s):
    """Polls cond() until it is truthy or limit_s passed; its last value."""
    deadline = time.monotonic() + limit_s
    while True:
        v = cond()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(0.02)


def children_settle(before, limit_s=5.0):
    """Children beyond `before`, once they are gone or `limit_s` passed (a
    zombie is still a child: gone means reaped)."""
    wait_for(lambda: not children() - before, limit_s)
    return children() - before
