#!/bin/sh
# Issue 5 acceptance through the real CLI and a real bubblewrap session:
#   ccsb_run_accept.sh BUILD_ROOT            as the current user
#   ccsb_run_accept.sh BUILD_ROOT --unpriv   as ccsbtest, from a copy in /tmp
# Exit 77 when bubblewrap or the user is not available.
set -eu
build=$1
mode=${2:-}
if [ "$mode" = --unpriv ]; then
    if [ "$(id -u)" != 0 ] || ! id ccsbtest >/dev/null 2>&1; then
        echo "skipped: needs root and the user ccsbtest"
        exit 77
    fi
    copy=$(mktemp -d /tmp/ccsb-guard-accept-XXXXXX)
    trap 'rm -rf "$copy"' EXIT INT TERM
    mkdir -p "$copy/lib" "$copy/helper" "$copy/tools/ccsb"
    cp -a "$build"/lib/libccsandbox.so* "$copy/lib/"
    cp "$build/helper/ccsb-init" "$copy/helper/"
    cp "$build/tools/ccsb/ccsb" "$copy/tools/ccsb/"
    cp "$0" "$copy/accept.sh"
    chmod -R go+rX,go-w "$copy"
    su ccsbtest -s /bin/sh -c "cd /tmp && HOME=/tmp sh '$copy/accept.sh' '$copy'"
    exit $?
fi

ccsb=$build/tools/ccsb/ccsb
if ! bwrap --unshare-all --ro-bind / / true >/dev/null 2>&1; then
    echo "skipped: bubblewrap cannot create a sandbox here"
    exit 77
fi
work=$(mktemp -d /tmp/ccsb-guard-ws-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
# No glob flags: `ccsb run` applies the dispatch default (.env, *.key, *.pem).
run() { "$ccsb" run "$@"; }

if run --events ev1.json -- sh -c 'echo x > .env' 2>/dev/null; then fail ".env was written"; fi
[ ! -e .env ] || fail ".env exists on the host"
grep '"violation"' ev1.json | grep '"file-write-create"' | grep -q '\.env' ||
    fail "no file-write-create violation naming .env"
# One denial, one event: the shell's "Permission denied" line is not a second.
n=$(grep -c '"violation"' ev1.json)
[ "$n" -eq 1 ] || fail "$n violation events for one denial"

if run --events ev2.json -- sh -c 'echo x > ok.txt && mv ok.txt a.pem' 2>/dev/null; then
    fail "mv ok.txt a.pem succeeded"
fi
[ -e ok.txt ] || fail "ok.txt is gone"
[ ! -e a.pem ] || fail "a.pem exists on the host"
grep '"violation"' ev2.json | grep '"file-rename"' | grep -q 'a\.pem' ||
    fail "no file-rename violation naming a.pem"

out=$(run -- sh -c 'umask 022; touch n; stat -c %a n')
[ "$out" = 644 ] || fail "umask 022 gave mode '$out', want 644"
[ "$(stat -c %u n)" = "$(id -u)" ] || fail "n is not owned by $(id -u)"
# Told otherwise, the default goes away.
"$ccsb" run --no-default-globs -- sh -c 'echo x > .env' || fail "--no-default-globs still denies"
[ -e .env ] || fail ".env missing with --no-default-globs"
echo "ok: acceptance as uid $(id -u)"
