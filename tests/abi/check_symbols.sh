#!/bin/sh
# Exported symbols == the version script, every one prefixed ccsb_, all in CCSB_1.0.
# usage: check_symbols.sh LIB MAPFILE
set -eu
lib=$1
map=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' \
  | grep -v '^CCSB_1' | sort -u > "$tmp/exported"
sed -n 's/^[[:space:]]*\(ccsb_[a-z0-9_]*\);.*/\1/p' "$map" | sort -u > "$tmp/mapped"
status=0
if ! diff -u "$tmp/mapped" "$tmp/exported" > "$tmp/diff"; then
  echo "exported symbols differ from $map (- only in map, + only exported):"
  cat "$tmp/diff"
  status=1
fi
if grep -v '^ccsb_' "$tmp/exported"; then
  echo "symbols above lack the ccsb_ prefix"
  status=1
fi
# Every public symbol carries the CCSB_1.0 version node.
unversioned=$(objdump -T "$lib" | awk '$NF ~ /^ccsb_/ && $(NF-1) !~ /CCSB_1\.0/ {print $NF}')
if [ -n "$unversioned" ]; then
  echo "symbols without the CCSB_1.0 version: $unversioned"
  status=1
fi
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
if [ "$soname" != "libccsandbox.so.1" ]; then
  echo "SONAME is '$soname', expected libccsandbox.so.1"
  status=1
fi
n=$(wc -l < "$tmp/exported")
[ $status -eq 0 ] && echo "$n symbols exported, all in the map and versioned CCSB_1.0"
exit $status
