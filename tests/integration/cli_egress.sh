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

# Proxy chaining: an upstream HTTP proxy (the host's own) on loopback that
# logs each CONNECT and checks its credential; allowed connections go through
# it, refused ones never reach it.
python3 - > uport.txt 2>/dev/null <<'PY' &
import base64, socket, threading
want = "Basic " + base64.b64encode(b"u:p@ss").decode()
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(16)
print(ls.getsockname()[1], flush=True)
log = open("upstream.log", "a")
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d: break
            b.sendall(d)
    except OSError: pass
    finally:
        try: b.shutdown(socket.SHUT_WR)
        except OSError: pass
def serve(c):
    head = b""
    while b"\r\n\r\n" not in head:
        d = c.recv(4096)
        if not d: return c.close()
        head += d
    lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
    auth = [l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("proxy-authorization:")]
    log.write(lines[0] + (" auth-ok" if auth == [want] else " auth-bad") + "\n"); log.flush()
    method, target = lines[0].split()[:2]
    if method != "CONNECT" or auth != [want]:
        c.sendall(b"HTTP/1.1 407 no\r\n\r\n"); return c.close()
    host, port = target.rsplit(":", 1)
    u = socket.create_connection((host.strip("[]"), int(port)))
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
    pipe(c, u)
ls.settimeout(60)
try:
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
except OSError: pass
PY
up=$!
trap 'kill $srv $up 2>/dev/null; rm -rf "$work"' EXIT
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s uport.txt ] && break; sleep 0.2; done
uport=$(cat uport.txt)
out=$("$CCSB" run --allow 127.0.0.1 --upstream-proxy "http://u:p%40ss@127.0.0.1:$uport" \
  -- sh -c "curl -s --max-time 10 http://127.0.0.1:$port/index.html; \
   curl -s --max-time 10 -o /dev/null -w '%{http_code}\n' http://denied.invalid/")
[ "$(echo "$out" | head -1)" = "hello-through-proxy" ] \
  && ok "allowed connection through the upstream proxy" || bad "upstream chaining (got '$out')"
grep -q "^CONNECT 127.0.0.1:$port HTTP/1.1 auth-ok$" upstream.log \
  && ok "the upstream proxy saw the checked address with its credential" \
  || bad "upstream log: $(cat upstream.log 2>/dev/null)"
[ "$(echo "$out" | tail -1)" = "403" ] && ! grep -q denied upstream.log \
  && ok "a refused host never reaches the upstream proxy" || bad "refused host and upstream"
"$CCSB" run --upstream-proxy "socks5://127.0.0.1:1080" -- true 2>err.txt
[ $? -ne 0 ] && grep -q "upstreamProxy: only http://" err.txt \
  && ok "a bad upstream proxy is refused, naming the field" || bad "bad upstream: $(cat err.txt)"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
