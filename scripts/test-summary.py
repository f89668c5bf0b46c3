#!/usr/bin/env python3
"""Adds up meson testlog.json files and prints 'N passed, N failed, N skipped'
(and, apart, the tests that are expected to fail: escapes known to be open)."""
import json
import sys

passed = failed = skipped = known_open = 0
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                result = json.loads(line).get("result", "")
                if result == "OK":
                    passed += 1
                elif result == "EXPECTEDFAIL":
                    known_open += 1
                elif result == "SKIP":
                    skipped += 1
                else:
                    failed += 1
    except FileNotFoundError:
        print(f"test-summary: {path} missing", file=sys.stderr)
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped"
      + (f", {known_open} known open (expected to fail, see docs/guard.md)" if known_open else ""))
sys.exit(1 if failed or passed == 0 else 0)
