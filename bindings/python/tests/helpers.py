"""Shared fixtures for the binding tests: locating the source tree and the
native backend's availability (tests that need it skip with the reason)."""
import os
import re

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


def launch_native_or_skip(test, ctx, **kwargs):
    native_or_skip(test, ctx)
    try:
        return ctx.launch(backend="native", **kwargs)
    except (ccsandbox.Unavailable, ccsandbox.Unsupported) as e:
        test.skipTest("native backend not in this build: %s" % e)
