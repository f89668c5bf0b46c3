#!/bin/sh
# The `ccsb` command line on the none backend: the contract users rely on.
# usage: cli_none.sh PATH/TO/ccsb
set -u
CCSB=$1
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }
work=$(mktemp -d /tmp/ccsb-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# Injection variables never reach the command.
out=$(LD_PRELOAD=/x NODE_OPTIONS=--x BASH_ENV=/y "$CCSB" run --backend none -- \
      sh -c 'echo "[$LD_PRELOAD$NODE_OPTIONS$BASH_ENV]"' 2>/dev/null)
[ "$out" = "[]" ] && ok "env sanitised" || bad "env sanitised (got '$out')"

# Exit status passes through; stderr stays stderr.
"$CCSB" run --backend none -- sh -c 'echo E >&2; exit 7' 2>err.txt >out.txt
rc=$?
[ $rc -eq 7 ] && [ "$(cat err.txt)" = "E" ] && [ ! -s out.txt ] \
  && ok "exit status and stderr" || bad "exit status and stderr (rc=$rc)"

# Killed by a signal: 128+N.
"$CCSB" run --backend none -- sh -c 'kill -TERM $$'
rc=$?
[ $rc -eq 143 ] && ok "signal exit 128+N" || bad "signal exit (rc=$rc)"

# Timeout: 124 within 3 s, nothing left behind.
marker="30.$$1"  # a sleep duration no other process uses
start=$(date +%s)
"$CCSB" run --backend none --timeout 1 -- sh -c "sleep $marker & sleep $marker"
rc=$?
end=$(date +%s)
sleep 0.2
left=$(pgrep -f "sleep $marker" | wc -l)
[ $rc -eq 124 ] && [ $((end - start)) -le 3 ] && [ "$left" -eq 0 ] \
  && ok "timeout 124, no leftovers" || bad "timeout (rc=$rc, $((end - start)) s, $left left)"
"$CCSB" run --backend none --timeout 1 -- sh -c 'sleep 30 & sleep 30'
rc=$?
[ $rc -eq 124 ] && ok "timeout with forked children" || bad "timeout with children (rc=$rc)"

# Invalid spec: 125 naming the field; nothing runs.
printf '{"backend":"none","bindMounts":[{"hostPath":"relative"}]}' > bad.json
msg=$("$CCSB" run --spec bad.json -- touch ran 2>&1)
rc=$?
[ $rc -eq 125 ] && echo "$msg" | grep -q 'bindMounts\[0\].hostPath' && [ ! -e ran ] \
  && ok "invalid spec 125 names the field" || bad "invalid spec (rc=$rc: $msg)"

# microvm is never a silent fallback.
msg=$("$CCSB" run --backend microvm -- touch ran 2>&1)
rc=$?
[ $rc -eq 125 ] && [ -n "$msg" ] && [ ! -e ran ] \
  && ok "microvm 125" || bad "microvm (rc=$rc: $msg)"

# No spec: the current directory is bound and is the working directory.
out=$("$CCSB" run --backend none -- sh -c 'pwd; echo hi > f; cat f')
[ "$out" = "$(printf '%s\nhi' "$work")" ] && ok "cwd is the workdir" || bad "cwd (got '$out')"

# --events writes JSON lines including exit.
"$CCSB" run --backend none --events ev.jsonl -- echo hello >/dev/null
grep -q '"type":"exit"' ev.jsonl && grep -q '"type":"ready"' ev.jsonl \
  && grep -q '"data":"hello\\n"' ev.jsonl && ok "--events" || bad "--events"

# stdin passes through.
out=$(echo piped | "$CCSB" run --backend none -- cat)
[ "$out" = "piped" ] && ok "stdin" || bad "stdin (got '$out')"

# stdin from a regular file or /dev/null (epoll refuses both: ccsb reads
# them without waiting) and a file larger than the command's pipe (ccsb
# holds back and retries while the pipe is full): every byte, in order.
head -c 3000000 /dev/urandom > big.bin
want=$(cksum < big.bin)
out=$(timeout 20 "$CCSB" run --backend none -- cksum < big.bin)
[ "$out" = "$want" ] && ok "stdin from a 3 MB file" || bad "stdin from a file (got '$out', want '$want')"
out=$(timeout 20 "$CCSB" run --backend none -- sh -c 'sleep 0.2; cksum' < big.bin)
[ "$out" = "$want" ] && ok "stdin from a file, read late" || bad "stdin from a file, read late (got '$out')"
out=$(timeout 10 "$CCSB" run --backend none -- wc -c < /dev/null)
[ "$out" = "0" ] && ok "stdin from /dev/null" || bad "stdin from /dev/null (got '$out')"

# A signal to ccsb once the command runs kills the command (ccsb exits with
# its status), and ccsb does not hang.
timeout 10 "$CCSB" run --backend none -- sh -c 'echo started; exec sleep 20' > sig.txt &
pid=$!
n=0
while [ "$(cat sig.txt 2>/dev/null)" != "started" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 137 ] && ok "SIGINT kills the command" || bad "SIGINT (rc=$rc)"

# --env reaches the command.
out=$("$CCSB" run --backend none --env FOO=bar -- sh -c 'echo $FOO')
[ "$out" = "bar" ] && ok "--env" || bad "--env (got '$out')"

# spec default round-trips through spec validate.
"$CCSB" spec default > default.json && "$CCSB" spec validate default.json >/dev/null \
  && ok "spec default validates" || bad "spec default validates"

# The probe is functional, and says what to install when bwrap is missing.
out=$(PATH=/nonexistent "$CCSB" probe --json)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q '"requiresInstall":true' \
  && echo "$out" | grep -q '"missingPackages":"bubblewrap"' \
  && ok "probe without bwrap: requiresInstall names the package" || bad "probe without bwrap ($rc: $out)"
msg=$(PATH=/nonexistent "$CCSB" run -- true 2>&1)
rc=$?
[ $rc -eq 125 ] && echo "$msg" | grep -q "bubblewrap is not installed" \
  && ok "native without bwrap: 125 with the install hint" || bad "native without bwrap ($rc: $msg)"

# Unknown options fail cleanly.
"$CCSB" run --frobnicate -- true 2>/dev/null
[ $? -eq 125 ] && ok "unknown option 125" || bad "unknown option"

# A reader that goes away stops the command, as SIGPIPE would: 128+13.
start=$(date +%s)
{ "$CCSB" run --backend none --timeout 20 -- yes 2>/dev/null; echo $? > rc.txt; } | head -n 1 > first.txt
end=$(date +%s)
rc=$(cat rc.txt)
[ "$(cat first.txt)" = "y" ] && [ "$rc" -eq 141 ] && [ $((end - start)) -le 5 ] \
  && ok "closed stdout stops the command (141)" \
  || bad "closed stdout (rc=$rc, $((end - start)) s)"

# When the exit status cannot be known (the host ignores SIGCHLD, inherited
# here through exec; shells do not really ignore it, perl does), ccsb says so
# instead of passing off 255 as the command's own.
msg=$(perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV' "$CCSB" run --backend none -- sh -c 'exit 3' 2>&1)
rc=$?
if ! command -v perl >/dev/null; then
  echo "skipped: no perl to start ccsb with SIGCHLD ignored"
elif [ $rc -eq 3 ]; then
  ok "exit status with SIGCHLD ignored"
else
  echo "$msg" | grep -q "exit status unknown" \
    && ok "unknown exit status is reported" || bad "unknown exit status (rc=$rc: $msg)"
fi

# Started with stdin closed, the command reads EOF (and ccsb does not
# mistake one of its own descriptors for stdin).
out=$(timeout 10 "$CCSB" run --backend none -- od -c <&-)
rc=$?
[ $rc -eq 0 ] && [ "$out" = "0000000" ] && ok "stdin closed" || bad "stdin closed (rc=$rc, '$out')"
out=$(timeout 10 "$CCSB" run --backend none --events ev2.jsonl -- od -c <&-)
rc=$?
[ $rc -eq 0 ] && [ "$out" = "0000000" ] && grep -q '"type":"exit"' ev2.jsonl \
  && ok "stdin closed, --events FILE" || bad "stdin closed, --events (rc=$rc, '$out')"
timeout 10 "$CCSB" run --backend none -- sh -c 'echo out; echo err >&2' >&- 2>err2.txt
rc=$?
[ $rc -eq 0 ] && [ "$(cat err2.txt)" = "err" ] && ok "stdout closed" || bad "stdout closed (rc=$rc)"

# Egress proxies on host loopback, with the session's credential: a denied
# host gets 403 and a violation event; without the credential, 407.
if command -v curl >/dev/null; then
  out=$("$CCSB" run --backend none --events ev-none.jsonl -- sh -c \
    'curl -s -o /dev/null -w "%{http_code} " --max-time 10 http://denied.invalid/;
     curl -s -o /dev/null -w "%{http_code}" --max-time 10 \
       -x "http://127.0.0.1:${HTTP_PROXY##*:}" http://denied.invalid/' 2>/dev/null)
  [ "$out" = "403 407" ] && ok "none: proxies refuse denied hosts and strangers" \
    || bad "none: proxies (got '$out')"
  grep -q '"type":"violation".*"action":"network-outbound".*denied.invalid:80' ev-none.jsonl \
    && ok "none: violation event for the denied host" || bad "none: violation event"
else
  echo "ok - none: proxies # SKIP curl missing"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
