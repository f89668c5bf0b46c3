#!/bin/sh
# Runs a bubblewrap test program as the unprivileged user (default ccsbtest)
# from a root-owned copy of the pieces it needs, laid out as in the build
# tree, so ccsb-init is found next to the library exactly as in a real
# install and nothing in /work needs to be readable by that user.
#   run_as_user.sh BUILD_ROOT REL_PATH_OF_TEST [ARGS...]
# Exit 77 (skipped) unless run as root with the user present.
set -eu
build=$1
rel=$2
shift 2
user=${CCSB_TEST_USER:-ccsbtest}
if [ "$(id -u)" != 0 ] || ! id "$user" >/dev/null 2>&1; then
    echo "skipped: needs root and the user $user"
    exit 77
fi
copy=$(mktemp -d /tmp/ccsb-asuser-XXXXXX)
trap 'rm -rf "$copy"' EXIT INT TERM
mkdir -p "$copy/lib" "$copy/helper" "$copy/$(dirname "$rel")"
cp -a "$build"/lib/libccsandbox.so* "$copy/lib/"
cp "$build/helper/ccsb-init" "$copy/helper/"
cp "$build/$rel" "$copy/$rel"
chmod -R go+rX,go-w "$copy"
quoted=""
for a in "$@"; do quoted="$quoted '$a'"; done
# A clean login-like environment: HOME of the user, no root leftovers.
su "$user" -s /bin/sh -c "cd /tmp && HOME=\$(getent passwd $user | cut -d: -f6) CK_DEFAULT_TIMEOUT=\${CK_DEFAULT_TIMEOUT:-120} '$copy/$rel'$quoted"
