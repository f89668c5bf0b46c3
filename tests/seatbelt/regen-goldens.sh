#!/bin/sh
# Rewrites tests/seatbelt/golden/*.sb from tests/seatbelt/policies/*.json.
# Run it only on purpose, then review every changed line with
#   git diff tests/seatbelt/golden
# against SBPL semantics before committing: a golden is a claim.
# Usage: tests/seatbelt/regen-goldens.sh [build-dir]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-"$src/build"}
ninja -C "$build" tests/seatbelt/test-seatbelt-golden
CCSB_SOURCE_ROOT="$src" "$build/tests/seatbelt/test-seatbelt-golden" --regen
