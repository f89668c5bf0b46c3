#!/bin/sh
# unixSockets end to end in a real sandbox: without it socket(AF_UNIX) is
# refused; with --unix-socket the command reaches that host socket.
# usage: cli_unix_socket.sh PATH/TO/ccsb
set -u
CCSB=$1
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }
if ! "$CCSB" probe >/dev/null 2>&1; then
  echo "SKIP: no native sandbox here"; exit 77
fi
sock_dir=$(mktemp -d /tmp/ccsb-sock-XXXXXX)
work=$(mktemp -d /tmp/ccsb-sockw-XXXXXX)
chmod 755 "$sock_dir"
sock="$sock_dir/app.sock"
# A host server that answers twice and stops by itself after 30 s.
python3 - "$sock" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(4); s.settimeout(30)
for _ in range(2):
    try:
        c, _ = s.accept()
    except OSError:
        break
    c.sendall(b"hello-from-host\n"); c.close()
PY
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$sock_dir" "$work"' EXIT
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -S "$sock" ] && break; sleep 0.2; done
cd "$work" || exit 1
client='import socket, sys
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
    print(s.recv(100).decode().strip())
except OSError as e:
    print("refused", e.errno)'

out=$("$CCSB" run -- python3 -c "$client" "$sock" 2>&1)
[ "$out" = "refused 1" ] && ok "AF_UNIX refused without unixSockets" || bad "without unixSockets (got '$out')"
out=$("$CCSB" run --unix-socket "$sock" -- python3 -c "$client" "$sock" 2>&1)
[ "$out" = "hello-from-host" ] && ok "the listed socket is reachable" || bad "with --unix-socket (got '$out')"
msg=$("$CCSB" run --unix-socket "$work" -- true 2>&1)
rc=$?
[ $rc -eq 125 ] && echo "$msg" | grep -q "is not a unix socket" \
  && ok "a non-socket is refused by name" || bad "non-socket ($rc: $msg)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
