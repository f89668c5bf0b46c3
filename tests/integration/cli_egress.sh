#!/bin/sh
# `ccsb run` egress, end to end in a real sandbox: an allowed loopback server is
# reached through the proxy variables; a denied host gets 403 and a violation
# event; without an allow entry for loopback, NO_PROXY keeps loopback inside.
# usage: cli_egress.sh PATH/TO/ccsb
set -u
CCSB=$1
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }
if ! "$CCSB" probe >/dev/null 2>&1; then
  echo "SKIP: no native sandbox here"; exit 77
fi
command -v curl >/dev/null || { echo "SKIP: curl missing"; exit 77; }
work=$(mktemp -d /tmp/ccsb-cli-egress-XXXXXX)
cd "$work" || exit 1
echo hello-through-proxy > index.html
# A loopback server on an ephemeral port; it stops by itself after 60 s.
python3 - > port.txt 2>/dev/null <<'PY' &
import http.server, socketserver, sys, threading
srv = socketserver.TCPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
print(srv.server_address[1], flush=True)
threading.Timer(60, srv.shutdown).start()
srv.serve_forever()
PY
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$work"' EXIT
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s port.txt ] && break; sleep 0.2; done
port=$(cat port.txt)

out=$("$CCSB" run --allow 127.0.0.1 --events ev.jsonl -- sh -c \
  "curl -s --max-time 10 http://127.0.0.1:$port/index.html; \
   curl -s --max-time 10 -o /dev/null -w '%{http_code}\n' http://denied.invalid/")
first=$(echo "$out" | head -1)
second=$(echo "$out" | tail -1)
[ "$first" = "hello-through-proxy" ] && ok "allowed loopback server through the proxy" \
  || bad "allowed loopback server (got '$first')"
[ "$second" = "403" ] && ok "denied host gets 403" || bad "denied host (got '$second')"
grep -q '"type":"violation".*"action":"network-outbound".*denied.invalid' ev.jsonl \
  && ok "violation event for the denied host" || bad "violation event"

# Not allowed: the proxy refuses loopback of the host even when asked through it.
code=$("$CCSB" run -- sh -c \
  "curl -s --noproxy '' --max-time 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/")
[ "$code" = "403" ] && ok "host loopback refused without an allow entry" \
  || bad "host loopback without allow (got '$code')"

# A direct connection that ignores the proxy variables goes nowhere.
code=$("$CCSB" run --allow 127.0.0.1 -- sh -c \
  "curl -s --noproxy '*' --max-time 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/")
[ "$code" = "000" ] && ok "direct connection fails" || bad "direct connection (got '$code')"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
