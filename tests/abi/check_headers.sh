#!/bin/sh
# Each public header compiles alone as strict C99 and as C++, and every name
# it declares carries the ccsb_/CCSB_ prefix.
# usage: check_headers.sh INCLUDE_DIR CC CXX
set -eu
inc=$1
cc=$2
cxx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for h in "$inc"/ccsandbox/*.h; do
  name=$(basename "$h")
  printf '#include <ccsandbox/%s>\nint main(void) { return 0; }\n' "$name" > "$tmp/t.c"
  if ! "$cc" -std=c99 -pedantic -Wall -Wextra -Werror -I"$inc" -c "$tmp/t.c" -o "$tmp/t.o"; then
    echo "FAIL: $name as C99"; status=1
  fi
  cp "$tmp/t.c" "$tmp/t.cpp"
  if ! "$cxx" -std=c++11 -pedantic -Wall -Wextra -Werror -I"$inc" -c "$tmp/t.cpp" -o "$tmp/t.o"; then
    echo "FAIL: $name as C++"; status=1
  fi
  # Declared identifiers (comments stripped): functions, typedefs, macros.
  "$cc" -fpreprocessed -dD -E -P "$h" > "$tmp/code.h" 2>/dev/null
  bad=$( { grep -oE '^#define [A-Za-z_][A-Za-z0-9_]*' "$tmp/code.h" | awk '{print $2}';
           grep -oE '\b[a-z_][a-z0-9_]*\(' "$tmp/code.h" | tr -d '(';
           grep -oE '^typedef .*\b([A-Za-z_][A-Za-z0-9_]*)\b;' "$tmp/code.h" | grep -oE '[A-Za-z_][A-Za-z0-9_]*;$' | tr -d ';';
         } | grep -vE '^(ccsb_|CCSB_|CCSANDBOX_|__attribute__|visibility|defined|sizeof)' \
           | grep -vE '^(void|int|char|const|struct|if|return)$' | sort -u)
  if [ -n "$bad" ]; then
    echo "FAIL: $name declares unprefixed names: $bad"; status=1
  fi
done
# The core header includes nothing but stddef.h and stdint.h.
others=$(grep -E '^#include' "$inc/ccsandbox/ccsandbox.h" | grep -vE '<stddef.h>|<stdint.h>' || true)
if [ -n "$others" ]; then
  echo "FAIL: ccsandbox.h includes more than stddef/stdint: $others"; status=1
fi
# Only ccsandbox-libevent.h names struct event_base.
if for h in "$inc"/ccsandbox/*.h; do
     "$cc" -fpreprocessed -dD -E -P "$h" 2>/dev/null | grep -q 'event_base' && echo "$h"
   done | grep -v 'ccsandbox-libevent.h'; then
  echo "FAIL: event_base named outside ccsandbox-libevent.h"; status=1
fi
[ $status -eq 0 ] && echo "headers: C99, C++ and prefixes ok"
exit $status
