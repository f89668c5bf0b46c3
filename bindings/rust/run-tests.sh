#!/bin/sh
# Runs `cargo test --offline --locked` for the Rust bindings against a meson
# build tree. usage: run-tests.sh <source root> <build root>
# Exit 77 (meson: skipped) only when no cargo exists at all.
set -eu
src=$1
build=$2

cargo=
for c in "${CARGO:-}" "$(command -v cargo 2>/dev/null || true)" "${HOME:-/nonexistent}/.cargo/bin/cargo" /usr/bin/cargo; do
  if [ -n "$c" ] && [ -x "$c" ]; then
    cargo=$c
    break
  fi
done
if [ -z "$cargo" ]; then
  echo "SKIP: no cargo found on PATH, in \$CARGO, ~/.cargo/bin or /usr/bin (Debian: apt-get install cargo)"
  exit 77
fi
echo "using $cargo ($("$cargo" --version))"

# Everything cargo writes goes under the meson build dir.
export CARGO_TARGET_DIR="$build/bindings/rust/target"
export PKG_CONFIG_PATH="$build/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CCSB_SOURCE_ROOT="$src"
# A sanitizer build: the test binaries (not cargo or rustc) get the runtime
# preloaded, through cargo's per-target runner.
if [ -n "${CCSB_TEST_PRELOAD:-}" ]; then
  rustc=${RUSTC:-$(dirname "$cargo")/rustc}
  [ -x "$rustc" ] || rustc=rustc
  triple=$("$rustc" -vV | sed -n 's/^host: //p')
  var=CARGO_TARGET_$(echo "$triple" | tr 'a-z-' 'A-Z_')_RUNNER
  export "$var=env LD_PRELOAD=$CCSB_TEST_PRELOAD"
  echo "test binaries run with LD_PRELOAD=$CCSB_TEST_PRELOAD"
fi
cd "$src/bindings/rust"
exec "$cargo" test --offline --locked -- --test-threads=2 --show-output
