#!/usr/bin/env python3
"""Checks that the Dart bindings cover the whole C ABI: every exported
symbol (the version script and, when nm is available, the built library's
dynamic symbol table) is looked up in lib/, with a native typedef whose
parameter and return types match the header, and every header constant has
its value in lib/src/constants.dart. There is no Dart SDK on this machine;
this is the mechanical check that keeps the untested binding aligned.

usage: check_symbols.py --map libccsandbox.map --header ccsandbox.h
                        [--library libccsandbox.so.1] --dart bindings/dart/lib
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdecl  # noqa: E402


def map_symbols(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    glob = text.split("global:", 1)[1].split("local:", 1)[0]
    return set(re.findall(r"\b(ccsb_[a-z0-9_]+)\s*;", glob))


def library_symbols(path):
    nm = shutil.which("nm")
    if not nm or not path:
        return None
    out = subprocess.run([nm, "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in ("T", "W"):
            name = parts[2].split("@")[0]
            if name.startswith("ccsb_"):
                syms.add(name)
    return syms


def split_top(params):
    """Splits a parameter list at commas outside <...>."""
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def strip_param_name(p):
    """"Pointer<Void> userdata" -> "Pointer<Void>"."""
    m = re.match(r"^(.*>|[A-Za-z0-9_]+)(\s+[a-z_][A-Za-z0-9_]*)?$", p)
    return m.group(1) if m else p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--map", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--library")
    ap.add_argument("--dart", required=True)
    a = ap.parse_args()

    header = ""
    for h in (a.header, os.path.join(os.path.dirname(a.header), "ccsandbox-libevent.h")):
        with open(h, encoding="utf-8") as f:
            header += f.read()
    decls = {name: (ret, params) for name, ret, params in cdecl.functions(header)}

    dart = {}
    for dirpath, _, files in os.walk(a.dart):
        for fn in files:
            if fn.endswith(".dart"):
                with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                    dart[os.path.join(dirpath, fn)] = f.read()
    all_dart = "\n".join(dart.values())
    typedefs = {m.group(1): (m.group(2).strip(), m.group(3))
                for m in re.finditer(r"typedef (ccsb_[a-z0-9_]+)_native = (.+?) Function\((.*)\);",
                                     all_dart)}
    lookups = set(re.findall(r"lookupFunction<[^>]*?(?:<[^;]*?)?>\('(ccsb_[a-z0-9_]+)'", all_dart))
    lookups |= set(re.findall(r"\('(ccsb_[a-z0-9_]+)'(?:, isLeaf: true)?\);", all_dart))

    exported = map_symbols(a.map)
    problems = []
    lib_syms = library_symbols(a.library)
    if lib_syms is not None:
        for s in sorted(lib_syms - exported):
            problems.append("%s is exported by the library but not in the map" % s)
        exported |= lib_syms
    if len(exported) < 90:
        problems.append("only %d exported symbols found; is the map readable?" % len(exported))

    for sym in sorted(exported):
        if sym not in lookups:
            problems.append("%s: not looked up in the Dart bindings" % sym)
            continue
        if sym not in decls:
            problems.append("%s: exported but not declared in the public headers" % sym)
            continue
        if sym not in typedefs:
            problems.append("%s: no %s_native typedef" % (sym, sym))
            continue
        ret, params = decls[sym]
        want = (cdecl.native_type(ret), [cdecl.native_type(p) for p in params])
        dret, dparams = typedefs[sym]
        got = (dret, [strip_param_name(p) for p in split_top(dparams)])
        if got != want:
            problems.append("%s: Dart says %s, the header says %s" % (sym, got, want))

    consts_path = os.path.join(a.dart, "src", "constants.dart")
    with open(consts_path, encoding="utf-8") as f:
        dconsts = {n: int(v) for n, v in
                   re.findall(r"const int (CCSB_[A-Z0-9_]+) = (-?\d+);", f.read())}
    for name, value in cdecl.constants(header).items():
        if dconsts.get(name) != value:
            problems.append("constant %s: Dart has %r, the header %d" % (name, dconsts.get(name),
                                                                         value))

    # Which C functions the idiomatic layer (everything but ffi.dart) calls.
    idiomatic = "\n".join(t for p, t in dart.items() if not p.endswith("ffi.dart"))
    unused = sorted(s for s in exported if not re.search(r"\b%s\(" % s, idiomatic))
    if problems:
        print("Dart bindings out of step with the C ABI:")
        for p in problems:
            print("  " + p)
        return 1
    print("ok: %d exported symbols, all bound with matching types; %d constants match"
          % (len(exported), len(dconsts)))
    if unused:
        print("bound but not used by the idiomatic layer (raw access only): " + ", ".join(unused))
    return 0


if __name__ == "__main__":
    sys.exit(main())
