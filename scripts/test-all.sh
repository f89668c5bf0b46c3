#!/bin/sh
# The full test run: build, every suite as the current user (root in CI),
# every suite again as an unprivileged user, then an ASan+UBSan build.
# usage: scripts/test-all.sh   (from the source root; needs scripts/install-deps.sh first)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
jobs=$(nproc 2>/dev/null || echo 2)

section() { printf '\n=== %s ===\n' "$1"; }

section "build (debugoptimized)"
[ -d build-test ] || meson setup build-test >/dev/null
meson compile -C build-test -j "$jobs"

logs=""
section "tests as $(id -un)"
meson test -C build-test --print-errorlogs --num-processes "$jobs"
cp build-test/meson-logs/testlog.json build-test/testlog-main.json
logs="$logs build-test/testlog-main.json"

if [ "$(id -u)" -eq 0 ]; then
  section "tests as an unprivileged user"
  user=ccsbtest
  id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$user"
  work=$(mktemp -d /tmp/ccsb-unpriv-XXXXXX)
  # Removed on every way out: a failing run must not leave the copy behind.
  trap 'rm -rf "$work"' EXIT
  # A copy the user owns: the checkout may sit where it cannot write.
  git ls-files -z | xargs -0 tar cf - | tar xf - -C "$work"
  chown -R "$user:$user" "$work"
  chmod 755 "$work"
  su "$user" -s /bin/sh -c "cd '$work' && meson setup build >/dev/null && \
      meson compile -C build -j $jobs >/dev/null && \
      meson test -C build --print-errorlogs --num-processes $jobs"
  cp "$work/build/meson-logs/testlog.json" build-test/testlog-unpriv.json
  logs="$logs build-test/testlog-unpriv.json"
  rm -rf "$work"
fi

section "ASan + UBSan (ccsb-init on glibc here, musl above where musl-gcc is installed)"
[ -d build-asan ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
  -Dbuildtype=debug -Dmusl_init=disabled >/dev/null
meson compile -C build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --num-processes "$jobs" --no-suite bench
cp build-asan/meson-logs/testlog.json build-test/testlog-asan.json
logs="$logs build-test/testlog-asan.json"

section "summary (root, unprivileged, ASan+UBSan)"
# shellcheck disable=SC2086
python3 scripts/test-summary.py $logs
