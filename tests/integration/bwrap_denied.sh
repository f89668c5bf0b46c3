#!/bin/sh
# A host where user namespaces are forbidden, simulated without touching the
# machine's sysctls: run the test host inside a bwrap whose user namespace
# disallows nesting (--disable-userns). The launch must fail with a clear
# message, never run unsandboxed.
set -eu
test_bin=$1
bwrap=$(command -v bwrap || true)
[ -n "$bwrap" ] || { echo "skipped: no bwrap"; exit 77; }
exec "$bwrap" --dev-bind / / --unshare-user --disable-userns --die-with-parent "$test_bin"
