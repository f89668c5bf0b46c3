"""Shared by generate_ffi.py and check_symbols.py: the public C headers'
declarations and their dart:ffi native types."""
import re

OPAQUE = {
    "ccsb_ctx": "CcsbCtx",
    "ccsb_spec": "CcsbSpec",
    "ccsb_session": "CcsbSession",
    "ccsb_exec_req": "CcsbExecReq",
    "ccsb_event": "CcsbEvent",
    "ccsb_probe_result": "CcsbProbeResult",
    "event_base": "EventBase",
}
CALLBACKS = {
    "ccsb_destroy_fn": "CcsbDestroyFn",
    "ccsb_event_cb": "CcsbEventCb",
    "ccsb_wakeup_fn": "CcsbWakeupFn",
}
SCALAR = {
    "int": ("Int", "int"),
    "size_t": ("Size", "int"),
    "uint8_t": ("Uint8", "int"),
    "uint16_t": ("Uint16", "int"),
    "uint32_t": ("Uint32", "int"),
    "uint64_t": ("Uint64", "int"),
    "int64_t": ("Int64", "int"),
    "void": ("Void", "void"),
}


def strip_comments(text):
    """Comments and preprocessor lines (with their continuations) removed."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


def functions(header_text):
    """[(name, return C type, [param C types])] in header order."""
    text = strip_comments(header_text)
    out = []
    for m in re.finditer(r"CCSB_API\s+([^;{]*?)\b(ccsb_[a-z0-9_]+)\s*\(([^)]*)\)\s*;", text):
        ret, name, params = m.group(1), m.group(2), m.group(3)
        ptypes = []
        if params.strip() != "void":
            for p in params.split(","):
                p = " ".join(p.split())
                name_at = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", p)
                ptypes.append(p[:name_at.start()].strip())
        out.append((name, " ".join(ret.split()), ptypes))
    return out


def constants(header_text):
    """{name: int} for every `#define CCSB_X <integer>`."""
    return {n: int(v) for n, v in
            re.findall(r"^#define (CCSB_[A-Z0-9_]+) (-?\d+)\b", header_text, re.M)}


def native_type(ctype):
    """A C type ("const char *const *") as a dart:ffi native type."""
    ctype = ctype.replace("struct ", "")
    stars = ctype.count("*")
    base = " ".join(w for w in ctype.replace("*", " ").split() if w != "const")
    if base == "char":
        t = "Utf8" if stars else "Char"
    elif base in SCALAR:
        t = SCALAR[base][0]
    elif base in OPAQUE:
        t = OPAQUE[base]
    elif base in CALLBACKS:
        t = "Pointer<NativeFunction<%s>>" % CALLBACKS[base]
    else:
        raise ValueError("no dart:ffi mapping for C type %r" % ctype)
    for _ in range(stars):
        t = "Pointer<%s>" % t
    return t


def dart_type(ctype):
    """The Dart-side type of a C parameter or return."""
    if "*" in ctype or ctype.replace("const ", "") in CALLBACKS:
        return native_type(ctype)
    base = " ".join(w for w in ctype.split() if w != "const")
    return SCALAR[base][1]
