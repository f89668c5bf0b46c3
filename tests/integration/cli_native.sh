#!/bin/sh
# `ccsb run` on the native backend starts exactly one bubblewrap: no hidden
# probe sandbox before the real one (it used to double the cost of a run).
# usage: cli_native.sh PATH/TO/ccsb
set -u
CCSB=$1
real=$(command -v bwrap) || { echo "SKIP: no bwrap"; exit 77; }
"$CCSB" probe >/dev/null 2>&1 || { echo "SKIP: no native sandbox here"; exit 77; }
work=$(mktemp -d /tmp/ccsb-native-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/ws"
# A bwrap that counts its starts, then is the real one.
printf '#!/bin/sh\necho start >> "%s/starts"\nexec "%s" "$@"\n' "$work" "$real" > "$work/bin/bwrap"
chmod 755 "$work/bin/bwrap"
cd "$work/ws" || exit 1
out=$(PATH="$work/bin:$PATH" "$CCSB" run -- sh -c 'echo inside $CCSB_SANDBOX')
n=$(wc -l < "$work/starts")
fail=0
[ "$out" = "inside bubblewrap" ] && echo "ok - ran in bubblewrap" || { echo "not ok - output '$out'"; fail=1; }
[ "$n" -eq 1 ] && echo "ok - one bwrap start" || { echo "not ok - $n bwrap starts"; fail=1; }
echo "$((2 - fail)) passed, $fail failed"
exit $fail
