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

# A signal while the sandbox starts ends ccsb by that signal (128+N), before
# the command runs: the command goes out with the launch, but it must not
# start when nobody is left to watch it (it was: started, then killed,
# exit 137). Here bwrap itself sends SIGTERM to ccsb as it starts.
printf '#!/bin/sh\nkill -TERM $PPID\nexec "%s" "$@"\n' "$real" > "$work/bin/bwrap"
PATH="$work/bin:$PATH" "$CCSB" run -- sh -c 'echo ran > marker; sleep 5'
rc=$?
sleep 0.3
[ $rc -eq 143 ] && echo "ok - SIGTERM while starting: exit 143" || { echo "not ok - SIGTERM while starting: rc=$rc"; fail=1; }
[ ! -e marker ] && echo "ok - the command never ran" || { echo "not ok - the command ran"; fail=1; }
left=0
for d in /proc/[0-9]*; do
    [ "${d#/proc/}" = $$ ] && continue
    [ "$(readlink "$d/cwd" 2>/dev/null)" = "$work/ws" ] && left=$((left + 1))
done
[ $left -eq 0 ] && echo "ok - nothing left running" || { echo "not ok - $left processes left"; fail=1; }

echo "$((5 - fail)) passed, $fail failed"
exit $fail
