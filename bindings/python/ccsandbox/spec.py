"""Spec: what a session may see and do, built from keyword arguments or JSON."""
import ctypes
import json
import os

from . import _lib
from . import constants as C
from .errors import error_for

_ERRBUF = 1024

# kwarg -> (C setter, kind). Lists call the adder once per item.
_SCALARS = {
    "session_id": ("ccsb_spec_set_session_id", "str"),
    "workspace_id": ("ccsb_spec_set_workspace_id", "str"),
    "agent_id": ("ccsb_spec_set_agent_id", "str"),
    "guest_workdir": ("ccsb_spec_set_guest_workdir", "str"),
    "network_enabled": ("ccsb_spec_set_network_enabled", "bool"),
    "allow_git_config": ("ccsb_spec_set_allow_git_config", "bool"),
    "upstream_proxy": ("ccsb_spec_set_upstream_proxy", "str"),
    "timeout_ms": ("ccsb_spec_set_timeout_ms", "u64"),
    "memory_max": ("ccsb_spec_set_memory_max", "u64"),
    "pids_max": ("ccsb_spec_set_pids_max", "u32"),
}
_LISTS = {
    "egress_allow": "ccsb_spec_add_egress_allow",
    "egress_deny": "ccsb_spec_add_egress_deny",
    "protected_paths": "ccsb_spec_add_protected_path",
    "runner_state_dirs": "ccsb_spec_add_runner_state_dir",
    "exec_grant_roots": "ccsb_spec_add_exec_grant_root",
    "deny_read": "ccsb_spec_add_deny_read",
    "deny_write_globs": "ccsb_spec_add_deny_write_glob",
    "unix_sockets": "ccsb_spec_add_unix_socket",
}


class BindMount:
    """A host path made visible in the sandbox (at guest_path, default the same)."""

    __slots__ = ("host_path", "guest_path", "read_only")

    def __init__(self, host_path, guest_path=None, read_only=False):
        self.host_path = os.fspath(host_path)
        self.guest_path = os.fspath(guest_path) if guest_path is not None else None
        self.read_only = bool(read_only)

    @classmethod
    def coerce(cls, item, where):
        if isinstance(item, cls):
            return item
        if isinstance(item, (str, bytes, os.PathLike)):
            return cls(item)
        if isinstance(item, dict):
            unknown = set(item) - {"host_path", "guest_path", "read_only",
                                   "hostPath", "guestPath", "readOnly"}
            if unknown:
                raise TypeError("%s: unknown key %s" % (where, sorted(unknown)[0]))
            host = item.get("host_path", item.get("hostPath"))
            if host is None:
                raise TypeError("%s: host_path is required" % where)
            return cls(host, item.get("guest_path", item.get("guestPath")),
                       item.get("read_only", item.get("readOnly", False)))
        if isinstance(item, (tuple, list)) and 1 <= len(item) <= 3:
            return cls(*item)
        raise TypeError("%s: expected BindMount, path, dict or (host, guest, read_only)" % where)

    def __repr__(self):
        return "BindMount(%r, %r, read_only=%r)" % (self.host_path, self.guest_path,
                                                    self.read_only)


def _enum(value, table, what):
    if isinstance(value, bool):
        raise TypeError("%s: expected a name or a CCSB_* number, got bool" % what)
    if isinstance(value, int):
        if value not in table.values():
            raise ValueError("%s: unknown value %d" % (what, value))
        return value
    if isinstance(value, str) and value in table:
        return table[value]
    raise ValueError("%s: unknown name %r (expected one of %s)"
                     % (what, value, ", ".join(table)))


class Spec:
    """A sandbox spec. Keyword arguments use the snake_case of the JSON field
    names: Spec(backend="none", bind_mounts=["/srv/repo"], guest_workdir="/srv/repo",
    egress_allow=["*.example.com"], env={"LANG": "C.UTF-8"}, timeout_ms=60000)."""

    def __init__(self, **kwargs):
        self._p = _lib.spec_p()
        L = _lib.lib()
        self._L = L
        r = L.ccsb_spec_new(ctypes.byref(self._p))
        if r:
            raise error_for(r, "cannot allocate a spec", "ccsb_spec_new")
        self.update(**kwargs)

    @classmethod
    def _adopt(cls, p):
        self = cls.__new__(cls)
        self._L = _lib.lib()
        self._p = p
        return self

    @classmethod
    def from_json(cls, text):
        """Parses and validates a JSON spec (str, bytes or a dict). A bad
        field raises SpecError whose message names it."""
        if isinstance(text, dict):
            text = json.dumps(text)
        b = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        L = _lib.lib()
        p = _lib.spec_p()
        err = ctypes.create_string_buffer(_ERRBUF)
        r = L.ccsb_spec_from_json(ctypes.byref(p), b, len(b), err, _ERRBUF)
        if r:
            raise error_for(r, _lib.text(err.value), "ccsb_spec_from_json")
        return cls._adopt(p)

    def _ptr(self):
        if not self._p:
            raise ValueError("spec: used after close()")
        return self._p

    def _check(self, r, call, what):
        if r:
            raise error_for(r, what, call)

    def update(self, **kwargs):
        """Applies keyword arguments (the same as the constructor's)."""
        L, p = self._L, self._ptr()
        for key, value in kwargs.items():
            if key == "backend":
                self._check(L.ccsb_spec_set_backend(p, _enum(value, C.BACKENDS, "backend")),
                            "ccsb_spec_set_backend", "backend: rejected %r" % (value,))
            elif key == "mode":
                self._check(L.ccsb_spec_set_mode(p, _enum(value, C.MODES, "mode")),
                            "ccsb_spec_set_mode", "mode: rejected %r" % (value,))
            elif key in _SCALARS:
                fn, kind = _SCALARS[key]
                if kind == "str":
                    arg = _lib.enc(value, key)
                elif kind == "bool":
                    arg = 1 if value else 0
                else:
                    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                        raise ValueError("%s: expected a non-negative integer, got %r"
                                         % (key, value))
                    if value >= (1 << (64 if kind == "u64" else 32)):
                        raise ValueError("%s: %d is too large" % (key, value))
                    arg = value
                self._check(getattr(L, fn)(p, arg), fn, "%s: rejected %r" % (key, value))
            elif key in _LISTS:
                fn = _LISTS[key]
                if isinstance(value, (str, bytes)):
                    raise TypeError("%s: expected a list of strings, got one string" % key)
                for i, item in enumerate(value):
                    where = "%s[%d]" % (key, i)
                    self._check(getattr(L, fn)(p, _lib.enc(item, where)), fn,
                                "%s: rejected %r" % (where, item))
            elif key == "bind_mounts":
                for i, item in enumerate(value):
                    self.add_bind_mount(BindMount.coerce(item, "bind_mounts[%d]" % i))
            elif key == "env":
                for name, val in dict(value).items():
                    fn = "ccsb_spec_set_env"
                    self._check(L.ccsb_spec_set_env(p, _lib.enc(name, "env name"),
                                                    _lib.enc(val, "env[%s]" % name)),
                                fn, "env[%s]: rejected" % name)
            else:
                raise TypeError("Spec: unknown field %r" % key)
        return self

    def add_bind_mount(self, host_path, guest_path=None, read_only=False):
        m = host_path if isinstance(host_path, BindMount) else BindMount(host_path, guest_path,
                                                                        read_only)
        r = self._L.ccsb_spec_add_bind_mount(self._ptr(), _lib.enc(m.host_path, "host_path"),
                                             _lib.enc(m.guest_path, "guest_path"),
                                             1 if m.read_only else 0)
        self._check(r, "ccsb_spec_add_bind_mount", "bind mount %r rejected" % (m,))
        return self

    def to_json(self):
        out = ctypes.c_void_p()
        self._check(self._L.ccsb_spec_to_json(self._ptr(), ctypes.byref(out)),
                    "ccsb_spec_to_json", "cannot serialise the spec")
        return _lib.take_owned(out)

    def as_dict(self):
        return json.loads(self.to_json())

    def validate(self):
        """Full validation, as launch does. Raises SpecError naming the field."""
        err = ctypes.create_string_buffer(_ERRBUF)
        r = self._L.ccsb_spec_validate(self._ptr(), err, _ERRBUF)
        self._check(r, "ccsb_spec_validate", _lib.text(err.value))
        return self

    def copy(self):
        p = _lib.spec_p()
        self._check(self._L.ccsb_spec_copy(self._ptr(), ctypes.byref(p)), "ccsb_spec_copy",
                    "cannot copy the spec")
        return Spec._adopt(p)

    def check_host(self, host):
        """(allowed, reason) for egress to "host", "host:port" or "[v6]:port"."""
        allowed = ctypes.c_int(0)
        reason = ctypes.c_void_p()
        r = self._L.ccsb_spec_check_host(self._ptr(), _lib.enc(host, "host"),
                                         ctypes.byref(allowed), ctypes.byref(reason))
        text = _lib.take_owned(reason)
        self._check(r, "ccsb_spec_check_host", text or "host %r rejected" % (host,))
        return bool(allowed.value), text

    def explain(self, platform=None):
        """The resolved policy as text; platform "linux"/"macos" or None (this host)."""
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRBUF)
        r = self._L.ccsb_explain(self._ptr(), _lib.enc(platform, "platform"),
                                 ctypes.byref(out), err, _ERRBUF)
        text = _lib.take_owned(out)
        self._check(r, "ccsb_explain", _lib.text(err.value))
        return text

    def close(self):
        p, self._p = getattr(self, "_p", None), None
        if p:
            self._L.ccsb_spec_free(p)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "Spec(%s)" % (self.to_json() if self._p else "<closed>")
