import 'dart:async';
import 'dart:convert';
import 'dart:ffi';
import 'dart:isolate';
import 'dart:typed_data';

import 'package:ffi/ffi.dart';

import 'constants.dart';
import 'errors.dart';
import 'events.dart';
import 'ffi.dart';
import 'library.dart';
import 'types.dart';

const _errbufLen = 1024;

/// Session-level events that arrive while a launch is still in flight are
/// held for the handle it returns; at most this many per session. The first
/// command of a launchExec is exempt: its output is held in full (the
/// library's own queue would hold as much), so none of it is lost.
const _maxEarlyEvents = 1024;

String _text(Pointer<Utf8> p) => p == nullptr ? '' : p.toDartString();

Pointer<Utf8> _cstr(String s, String field, Allocator arena) {
  if (s.contains('\u0000')) {
    throw ArgumentError.value(s, field, 'contains a NUL character');
  }
  return s.toNativeUtf8(allocator: arena);
}

/// Copies a library-allocated string and frees it with ccsb_free.
String _takeOwned(CcsbBindings b, Pointer<Pointer<Utf8>> out) {
  final p = out.value;
  if (p == nullptr) return '';
  try {
    return p.toDartString();
  } finally {
    b.ccsb_free(p.cast());
  }
}

/// The doorbell shared by every Sandbox of this isolate. The library rings
/// it (possibly on its own thread) when a context's queue becomes
/// non-empty; NativeCallable.listener turns that into a message to this
/// isolate, and the drain itself (ccsb_ctx_next_event) runs here, on the
/// isolate's own thread. One callable lives as long as the isolate, so a
/// late ring can never reach a closed callable; the userdata is only a
/// token, so the callable never keeps a Sandbox alive.
class _Doorbell {
  static NativeCallable<CcsbWakeupFn>? _callable;
  static final Map<int, WeakReference<Sandbox>> _live = {};
  static int _nextToken = 1;
  static final Finalizer<int> _forget = Finalizer(remove);

  static (int, Pointer<NativeFunction<CcsbWakeupFn>>) add(Sandbox s) {
    final c = _callable ??= NativeCallable<CcsbWakeupFn>.listener(_ring);
    final token = _nextToken++;
    _live[token] = WeakReference(s);
    _forget.attach(s, token, detach: s);
    c.keepIsolateAlive = true;
    return (token, c.nativeFunction);
  }

  static void remove(int token) {
    _live.remove(token);
    _callable?.keepIsolateAlive = _live.isNotEmpty;
  }

  static void detach(Sandbox s, int token) {
    _forget.detach(s);
    remove(token);
  }

  static void _ring(Pointer<Void> userdata) {
    _live[userdata.address]?.target?._drain();
  }
}

/// One exec's arguments as plain data: launchExec hands them to its helper
/// isolate, which builds the request there.
final class _ExecArgs {
  /// Checks everything the caller can get wrong here, in the caller's
  /// isolate, so that the error names the argument.
  _ExecArgs(this.argv, this.env, this.cwd, this.stdin, this.timeout, this.pty, this.endSession) {
    if (argv.isEmpty) throw ArgumentError.value(argv, 'argv', 'must not be empty');
    void noNul(String v, String field) {
      if (v.contains('\u0000')) throw ArgumentError.value(v, field, 'contains a NUL character');
    }

    for (var i = 0; i < argv.length; i++) {
      noNul(argv[i], 'argv[$i]');
    }
    env.forEach((k, v) {
      noNul(k, 'env');
      noNul(v, 'env[$k]');
    });
    final c = cwd;
    if (c != null) noNul(c, 'cwd');
    final t = timeout;
    if (t != null && t.inMilliseconds <= 0) throw ArgumentError.value(t, 'timeout', 'must be positive');
  }

  final List<String> argv;
  final Map<String, String> env;
  final String? cwd;
  final bool stdin;
  final Duration? timeout;
  final (int, int)? pty;
  final bool endSession;
}

/// Builds the ccsb_exec_req for [a], runs [body] with it and frees it.
T _withExecReq<T>(CcsbBindings b, _ExecArgs a, T Function(Pointer<CcsbExecReq> req, Arena arena) body) {
  return using((arena) {
    final reqOut = arena<Pointer<CcsbExecReq>>();
    final r = b.ccsb_exec_req_new(reqOut);
    if (r != 0) throw SandboxException(r, 'ccsb_exec_req_new', 'cannot allocate an exec request');
    final req = reqOut.value;
    void check(int rc, String call, String what) {
      if (rc != 0) throw SandboxException(rc, call, what);
    }

    try {
      final argv = a.argv;
      final arr = arena<Pointer<Utf8>>(argv.length);
      for (var i = 0; i < argv.length; i++) {
        arr[i] = _cstr(argv[i], 'argv[$i]', arena);
      }
      check(b.ccsb_exec_req_set_argv(req, arr, argv.length), 'ccsb_exec_req_set_argv', 'argv: rejected');
      a.env.forEach((k, v) {
        check(b.ccsb_exec_req_set_env(req, _cstr(k, 'env', arena), _cstr(v, 'env[$k]', arena)),
            'ccsb_exec_req_set_env', 'env[$k]: rejected');
      });
      final cwd = a.cwd;
      if (cwd != null) {
        check(b.ccsb_exec_req_set_cwd(req, _cstr(cwd, 'cwd', arena)), 'ccsb_exec_req_set_cwd',
            'cwd: rejected $cwd');
      }
      if (a.stdin) {
        check(b.ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE), 'ccsb_exec_req_set_stdin', 'stdin: rejected');
      }
      final timeout = a.timeout;
      if (timeout != null) {
        check(b.ccsb_exec_req_set_timeout_ms(req, timeout.inMilliseconds), 'ccsb_exec_req_set_timeout_ms',
            'timeout: rejected');
      }
      final pty = a.pty;
      if (pty != null) {
        final (rows, cols) = pty;
        check(b.ccsb_exec_req_set_pty(req, rows, cols), 'ccsb_exec_req_set_pty', 'pty: rejected');
      }
      if (a.endSession) {
        check(b.ccsb_exec_req_set_end_session(req, 1), 'ccsb_exec_req_set_end_session',
            'endSession: rejected');
      }
      return body(req, arena);
    } finally {
      b.ccsb_exec_req_free(req);
    }
  });
}

/// Runs in a helper isolate so a slow launch (bubblewrap start) never
/// blocks the caller's event loop. The C API accepts calls from any thread.
/// ccsb_launch, or with [exec] ccsb_launch_exec (its request built here).
/// Returns (code, session address, exec id or 0, message).
(int, int, int, String) _launchOffThread((String, int, String, _ExecArgs?) args) {
  final (libPath, ctxAddr, specJson, exec) = args;
  final b = SandboxLibrary.open(path: libPath).bindings;
  final ctx = Pointer<CcsbCtx>.fromAddress(ctxAddr);
  return using((arena) {
    final specOut = arena<Pointer<CcsbSpec>>();
    final err = arena<Uint8>(_errbufLen).cast<Utf8>();
    final json = specJson.toNativeUtf8(allocator: arena);
    final r = b.ccsb_spec_from_json(specOut, json, json.length, err, _errbufLen);
    if (r != 0) return (r, 0, 0, _text(err));
    final spec = specOut.value;
    final out = arena<Pointer<CcsbSession>>();
    final id = arena<Uint64>();
    try {
      final rc = exec == null
          ? b.ccsb_launch(ctx, spec, out)
          : _withExecReq(b, exec, (req, _) => b.ccsb_launch_exec(ctx, spec, req, out, id));
      if (rc != 0) return (rc, 0, 0, _text(b.ccsb_ctx_errmsg(ctx)));
      return (0, out.value.address, exec == null ? 0 : id.value, '');
    } finally {
      b.ccsb_spec_free(spec);
    }
  });
}

// The closures handed to Isolate.run are made here, in top-level functions,
// so that they capture only the plain arguments and never a Sandbox.
Future<(int, int, int, String)> _launchInHelper((String, int, String, _ExecArgs?) args) =>
    Isolate.run(() => _launchOffThread(args));

Future<(int, SandboxProbe?)> _probeInHelper((String, int) args) => Isolate.run(() => _probeOffThread(args));

(int, SandboxProbe?) _probeOffThread((String, int) args) {
  final (libPath, ctxAddr) = args;
  final b = SandboxLibrary.open(path: libPath).bindings;
  return using((arena) {
    final out = arena<Pointer<CcsbProbeResult>>();
    final r = b.ccsb_probe(Pointer<CcsbCtx>.fromAddress(ctxAddr), out);
    if (r != 0) return (r, null);
    final pr = out.value;
    final s = arena<Pointer<Utf8>>();
    String owned(int rc, String call) {
      if (rc != 0) throw SandboxException(rc, call, 'cannot produce the text');
      return _takeOwned(b, s);
    }

    return (
      0,
      SandboxProbe(
        platform: _text(b.ccsb_probe_platform(pr)),
        mechanism: _text(b.ccsb_probe_mechanism(pr)),
        available: b.ccsb_probe_available(pr) != 0,
        requiresInstall: b.ccsb_probe_requires_install(pr) != 0,
        note: _text(b.ccsb_probe_note(pr)),
        hint: _text(b.ccsb_probe_hint(pr)),
        missingPackages: _text(b.ccsb_probe_missing_packages(pr))
            .split(' ')
            .where((p) => p.isNotEmpty)
            .toList(),
        microvmAvailable: b.ccsb_probe_microvm_available(pr) != 0,
        json: owned(b.ccsb_probe_to_json(pr, s), 'ccsb_probe_to_json'),
        startupMessage: owned(b.ccsb_probe_startup_message(pr, 0, s), 'ccsb_probe_startup_message'),
        disabledMessage: owned(b.ccsb_probe_startup_message(pr, 1, s), 'ccsb_probe_startup_message'),
      )
    );
  });
}

SandboxEvent _copyEvent(CcsbBindings b, Pointer<CcsbEvent> ev) {
  try {
    final sid = _text(b.ccsb_event_session_id(ev));
    final xid = b.ccsb_event_exec_id(ev);
    final ts = b.ccsb_event_timestamp_us(ev);
    final msg = _text(b.ccsb_event_message(ev));
    switch (b.ccsb_event_type(ev)) {
      case CCSB_EVENT_STARTING:
        return SandboxStarting(sid, xid, ts, msg);
      case CCSB_EVENT_READY:
        return SandboxReady(sid, xid, ts, msg);
      case CCSB_EVENT_STDOUT:
      case CCSB_EVENT_STDERR:
        final len = calloc<Size>();
        try {
          final p = b.ccsb_event_data(ev, len);
          final data = p == nullptr || len.value == 0
              ? Uint8List(0)
              : Uint8List.fromList(p.asTypedList(len.value));
          return SandboxOutput(sid, xid, ts,
              isStderr: b.ccsb_event_type(ev) == CCSB_EVENT_STDERR, data: data);
        } finally {
          calloc.free(len);
        }
      case CCSB_EVENT_EXIT:
        return SandboxExit(sid, xid, ts,
            exitCode: b.ccsb_event_exit_code(ev), signal: b.ccsb_event_signal(ev));
      case CCSB_EVENT_KILLED:
        return SandboxKilled(sid, xid, ts,
            reason: SandboxKillReason.fromValue(b.ccsb_event_kill_reason(ev)), message: msg);
      case CCSB_EVENT_VIOLATION:
        return SandboxViolation(sid, xid, ts,
            action: _text(b.ccsb_event_violation_action(ev)),
            target: _text(b.ccsb_event_violation_target(ev)),
            raw: _text(b.ccsb_event_violation_raw(ev)));
      case CCSB_EVENT_STATE:
        return SandboxStateChanged(sid, xid, ts,
            state: SandboxState.fromValue(b.ccsb_event_state(ev)), message: msg);
      case CCSB_EVENT_ERROR:
        return SandboxError(sid, xid, ts, msg);
      default:
        return SandboxUnknownEvent(sid, xid, ts, b.ccsb_event_type(ev));
    }
  } finally {
    b.ccsb_event_free(ev);
  }
}

/// A libccsandbox context: owns the library's event loop (on a library
/// thread), probes the host, and launches sessions. Close it when done: an
/// open Sandbox keeps the isolate alive, like an open server socket.
class Sandbox implements Finalizable {
  Sandbox._(this._lib, this._ctx);

  /// Opens a context. [libraryPath] overrides `$CCSB_LIBRARY` and the
  /// system loader.
  factory Sandbox.open({String? libraryPath}) {
    final lib = libraryPath != null ? SandboxLibrary.open(path: libraryPath) : SandboxLibrary.instance;
    final b = lib.bindings;
    final ctx = using((arena) {
      final out = arena<Pointer<CcsbCtx>>();
      final err = arena<Uint8>(_errbufLen).cast<Utf8>();
      final r = b.ccsb_ctx_new(out, err, _errbufLen);
      if (r != 0) throw SandboxException(r, 'ccsb_ctx_new', _text(err));
      return out.value;
    });
    final s = Sandbox._(lib, ctx);
    lib.ctxFinalizer.attach(s, ctx.cast(), detach: s);
    final (token, ring) = _Doorbell.add(s);
    s._token = token;
    // Events queued before this call ring the doorbell at once.
    final r = b.ccsb_ctx_set_wakeup(ctx, ring, Pointer<Void>.fromAddress(token), nullptr);
    if (r != 0) {
      final msg = _text(b.ccsb_ctx_errmsg(ctx));
      s._free();
      throw SandboxException(r, 'ccsb_ctx_set_wakeup', msg);
    }
    return s;
  }

  final SandboxLibrary _lib;
  final Pointer<CcsbCtx> _ctx;
  late final int _token;
  bool _closed = false;
  int _launching = 0;
  int _launchingExec = 0;
  final _launchDone = <Completer<void>>[];
  final _handles = <String, SandboxHandle>{};
  final _early = <String, List<SandboxEvent>>{};
  final _all = StreamController<SandboxEvent>.broadcast(sync: true);

  CcsbBindings get _b => _lib.bindings;

  /// Every event of every session of this context, as it is drained.
  Stream<SandboxEvent> get events => _all.stream;

  /// The library's version ("1.0.0").
  String get libraryVersion => _text(_b.ccsb_version());

  void _checkOpen() {
    if (_closed) throw StateError('Sandbox is closed');
  }

  int _check(int r, String call) {
    if (r < 0) throw SandboxException(r, call, _text(_b.ccsb_ctx_errmsg(_ctx)));
    return r;
  }

  /// Probes the host once per context (run off the isolate's thread: the
  /// first probe starts bubblewrap).
  Future<SandboxProbe> probe() async {
    _checkOpen();
    final (r, pr) = await _probeInHelper((_lib.path, _ctx.address));
    if (r != 0 || pr == null) {
      throw SandboxException(r, 'ccsb_probe', _text(_b.ccsb_ctx_errmsg(_ctx)));
    }
    return pr;
  }

  /// Starts one sandbox process ahead for the next native launch of this
  /// context (`ccsb_ctx_prestart`): on Linux an idle bubblewrap, so that
  /// launch skips bwrap's exec. Returns at once (the library's thread
  /// starts it), so it is called on this isolate's thread. Each native
  /// launch takes one; at most 4 wait, then a SandboxException with
  /// CCSB_E_STATE; CCSB_E_UNAVAILABLE where the native backend has nothing
  /// to start ahead (macOS). [close] ends those never taken.
  void prestart() {
    _checkOpen();
    _check(_b.ccsb_ctx_prestart(_ctx), 'ccsb_ctx_prestart');
  }

  /// Validates [spec] and starts a session; completes once it is warm. A
  /// bad field fails with a SandboxException whose message names it.
  Future<SandboxHandle> launch(SandboxSpec spec) async {
    final (h, _) = await _launch(spec, null);
    return h;
  }

  /// [launch] and [SandboxHandle.exec] as one call (`ccsb_launch_exec`):
  /// the command goes out with the launch and starts as soon as the sandbox
  /// is ready. Completes with the handle and the running exec, whose events
  /// all reach [SandboxExec.events] (none is lost while the call is in
  /// flight). Either both exist, or it fails with a SandboxException (the
  /// library's message) and nothing is left running. The options are
  /// [SandboxHandle.exec]'s; `endSession: true` makes it a one-shot run.
  Future<(SandboxHandle, SandboxExec)> launchExec(SandboxSpec spec, List<String> argv,
      {Map<String, String> env = const {},
      String? cwd,
      bool stdin = false,
      Duration? timeout,
      (int, int)? pty,
      bool endSession = false}) async {
    _checkOpen();
    final (h, x) = await _launch(spec, _ExecArgs(argv, env, cwd, stdin, timeout, pty, endSession));
    return (h, x!);
  }

  /// [launch], or with [exec] [launchExec]: the C call in a helper isolate,
  /// then the handles. While it is in flight, events of sessions without a
  /// handle are held for it (see [_route]).
  Future<(SandboxHandle, SandboxExec?)> _launch(SandboxSpec spec, _ExecArgs? exec) async {
    _checkOpen();
    final json = jsonEncode(spec.toJson());
    _launching++;
    if (exec != null) _launchingExec++;
    try {
      final (rc, addr, execId, msg) = await _launchInHelper((_lib.path, _ctx.address, json, exec));
      if (rc != 0) throw SandboxException(rc, exec == null ? 'ccsb_launch' : 'ccsb_launch_exec', msg);
      return _adopt(addr, execId);
    } finally {
      if (exec != null) _launchingExec--;
      _landed();
    }
  }

  /// The session a launch made, with its first exec when [execId] is not
  /// 0: registered, and given the events that came while it was in flight
  /// (the session's as [SandboxHandle.launchEvents], the exec's to it).
  (SandboxHandle, SandboxExec?) _adopt(int addr, int execId) {
    final ptr = Pointer<CcsbSession>.fromAddress(addr);
    if (_closed) {
      _b.ccsb_session_destroy(ptr);
      throw StateError('Sandbox was closed while the session launched');
    }
    final h = SandboxHandle._(this, ptr);
    final x = execId != 0 ? SandboxExec._(h, execId) : null;
    if (x != null) h._execs[execId] = x;
    _handles[h.sessionId] = h;
    final early = _early.remove(h.sessionId) ?? const <SandboxEvent>[];
    h.launchEvents = List.unmodifiable(early.where((e) => e.execId == 0));
    for (final ev in early) {
      if (ev.execId != 0) h._deliver(ev);
    }
    _drain();
    return (h, x);
  }

  /// A launch left the flight (its session adopted, or it failed). Once
  /// none is left, the events still held are for no handle and dropped,
  /// and close() may go on.
  void _landed() {
    _launching--;
    if (_launching == 0) {
      _early.clear();
      for (final c in _launchDone) {
        c.complete();
      }
      _launchDone.clear();
    }
  }

  void _drain() {
    if (_closed) return;
    final out = calloc<Pointer<CcsbEvent>>();
    try {
      for (;;) {
        final r = _b.ccsb_ctx_next_event(_ctx, out);
        if (r == CCSB_E_AGAIN) break;
        if (r != 0) {
          _all.addError(SandboxException(r, 'ccsb_ctx_next_event', 'cannot pop an event'));
          break;
        }
        _route(_copyEvent(_b, out.value));
      }
    } finally {
      calloc.free(out);
    }
  }

  void _route(SandboxEvent ev) {
    if (_all.hasListener) _all.add(ev);
    final h = _handles[ev.sessionId];
    if (h != null) {
      h._deliver(ev);
    } else if (_launching > 0) {
      final list = _early.putIfAbsent(ev.sessionId, () => []);
      if (list.length < _maxEarlyEvents || (ev.execId != 0 && _launchingExec > 0)) list.add(ev);
    }
  }

  void _forgetHandle(SandboxHandle h) {
    if (identical(_handles[h.sessionId], h)) _handles.remove(h.sessionId);
  }

  void _free() {
    _closed = true;
    _lib.ctxFinalizer.detach(this);
    // ccsb_ctx_free joins the library thread: no ring can follow it.
    _b.ccsb_ctx_free(_ctx);
    _Doorbell.detach(this, _token);
  }

  /// Stops every session, waits for launches in flight, frees the context.
  Future<void> close() async {
    if (_closed) return;
    while (_launching > 0) {
      final c = Completer<void>();
      _launchDone.add(c);
      await c.future;
    }
    if (_closed) return;
    for (final h in _handles.values.toList()) {
      h.close();
    }
    _free();
    await _all.close();
  }
}

/// A running session. [close] stops every process and frees it; an
/// unclosed handle is destroyed by a NativeFinalizer when collected.
class SandboxHandle implements Finalizable {
  SandboxHandle._(this._sandbox, this._ptr)
      : sessionId = _text(_sandbox._b.ccsb_session_id(_ptr)),
        backend = SandboxBackend.fromValue(_sandbox._b.ccsb_session_backend(_ptr)) ??
            SandboxBackend.none {
    _sandbox._lib.sessionFinalizer.attach(this, _ptr.cast(), detach: this);
  }

  final Sandbox _sandbox;
  final Pointer<CcsbSession> _ptr;
  bool _closed = false;
  final _execs = <int, SandboxExec>{};
  final _events = StreamController<SandboxEvent>.broadcast(sync: true);

  final String sessionId;

  /// The backend actually running (never silently different from what was
  /// asked, except `auto`).
  final SandboxBackend backend;

  /// The session's events that arrived before launch() completed
  /// (starting, state, ready).
  late final List<SandboxEvent> launchEvents;

  CcsbBindings get _b => _sandbox._b;

  /// Every event of this session from now on (exec events included).
  Stream<SandboxEvent> get events => _events.stream;

  /// Policy refusals in this session, as they happen.
  Stream<SandboxViolation> get violations =>
      events.where((e) => e is SandboxViolation).cast<SandboxViolation>();

  void _checkOpen() {
    if (_closed) throw StateError('session $sessionId is closed');
  }

  SandboxState get state {
    _checkOpen();
    return SandboxState.fromValue(_b.ccsb_session_state(_ptr)) ?? SandboxState.error;
  }

  /// The error that put the session in [SandboxState.error] ("" otherwise).
  String get error {
    _checkOpen();
    return _text(_b.ccsb_session_error(_ptr));
  }

  /// Workdir, tmp dir, pids, backend, limits applied, ...
  Map<String, Object?> details() {
    _checkOpen();
    return using((arena) {
      final out = arena<Pointer<Utf8>>();
      final r = _b.ccsb_session_details_json(_ptr, out);
      final text = _takeOwned(_b, out);
      if (r != 0) throw SandboxException(r, 'ccsb_session_details_json', 'cannot describe the session');
      return (jsonDecode(text) as Map).cast<String, Object?>();
    });
  }

  void _deliver(SandboxEvent ev) {
    if (_events.hasListener) _events.add(ev);
    if (ev.execId != 0) _execs[ev.execId]?._deliver(ev);
  }

  /// Starts [argv] (argv[0] looked up on the session's PATH). [stdin]: feed
  /// it with [SandboxExec.writeStdin]; [pty]: (rows, cols) of a terminal;
  /// [endSession]: when argv's main process exits, the session ends itself
  /// (every process of it killed; after the exit event, a
  /// [SandboxStateChanged] to [SandboxState.destroyed]) with no [stop] from
  /// here. For one-shot runs; [close] the handle afterwards as usual.
  SandboxExec exec(List<String> argv,
      {Map<String, String> env = const {},
      String? cwd,
      bool stdin = false,
      Duration? timeout,
      (int, int)? pty,
      bool endSession = false}) {
    _checkOpen();
    final args = _ExecArgs(argv, env, cwd, stdin, timeout, pty, endSession);
    return _withExecReq(_b, args, (req, arena) {
      final id = arena<Uint64>();
      _sandbox._check(_b.ccsb_exec(_ptr, req, id), 'ccsb_exec');
      // Registered before control returns to the event loop, so no drain
      // can deliver this exec's events ahead of it.
      final x = SandboxExec._(this, id.value);
      _execs[id.value] = x;
      return x;
    });
  }

  /// exec() and collect its output until it exits.
  Future<SandboxExecResult> run(List<String> argv,
          {Map<String, String> env = const {}, String? cwd, Duration? timeout}) =>
      exec(argv, env: env, cwd: cwd, timeout: timeout).collect();

  /// Kills every process of the session; the state becomes destroyed.
  void stop() {
    _checkOpen();
    _sandbox._check(_b.ccsb_session_stop(_ptr), 'ccsb_session_stop');
  }

  void suspend() {
    _checkOpen();
    _sandbox._check(_b.ccsb_session_suspend(_ptr), 'ccsb_session_suspend');
  }

  void resume() {
    _checkOpen();
    _sandbox._check(_b.ccsb_session_resume(_ptr), 'ccsb_session_resume');
  }

  /// Stops the session if needed and frees it (idempotent).
  void close() {
    if (_closed) return;
    _closed = true;
    _sandbox._lib.sessionFinalizer.detach(this);
    _b.ccsb_session_destroy(_ptr);
    // The exit/killed events of its execs are queued now; deliver them.
    _sandbox._drain();
    _sandbox._forgetHandle(this);
    for (final x in _execs.values.toList()) {
      x._abandon();
    }
    _events.close();
  }
}

/// How an exec ended, with its collected output.
class SandboxExecResult {
  SandboxExecResult(this.exit, this.stdout, this.stderr, this.killed, this.violations);

  final SandboxExit exit;
  final Uint8List stdout;
  final Uint8List stderr;
  final SandboxKillReason? killed;
  final List<SandboxViolation> violations;

  int get exitCode => exit.exitCode;
  int get signal => exit.signal;
  bool get success => exit.success;
  String get stdoutText => utf8.decode(stdout, allowMalformed: true);
  String get stderrText => utf8.decode(stderr, allowMalformed: true);
}

/// One command in a session. [events] (single subscription, buffered from
/// the start) ends after the exit event; or use [collect].
class SandboxExec {
  SandboxExec._(this._handle, this.id);

  final SandboxHandle _handle;
  final int id;
  final _events = StreamController<SandboxEvent>();
  final _exit = Completer<SandboxExit>();

  Stream<SandboxEvent> get events => _events.stream;

  /// Completes with the exit event.
  Future<SandboxExit> get exit => _exit.future;

  void _deliver(SandboxEvent ev) {
    _events.add(ev);
    if (ev is SandboxExit) {
      _exit.complete(ev);
      _events.close();
      _handle._execs.remove(id);
    }
  }

  void _abandon() {
    if (_exit.isCompleted) return;
    final e = StateError('session ${_handle.sessionId} closed before exec $id reported its exit');
    _exit.completeError(e);
    _exit.future.ignore();
    _events.addError(e);
    _events.close();
  }

  /// Listens to [events] and gathers output until the exit.
  Future<SandboxExecResult> collect() async {
    final out = BytesBuilder(copy: false);
    final err = BytesBuilder(copy: false);
    final violations = <SandboxViolation>[];
    SandboxKillReason? killed;
    SandboxExit? ended;
    await for (final ev in events) {
      switch (ev) {
        case SandboxOutput(isStderr: false, :final data):
          out.add(data);
        case SandboxOutput(isStderr: true, :final data):
          err.add(data);
        case SandboxKilled(:final reason):
          killed = reason;
        case SandboxViolation v:
          violations.add(v);
        case SandboxExit e:
          ended = e;
        default:
          break;
      }
    }
    if (ended == null) throw StateError('exec $id ended without an exit event');
    return SandboxExecResult(ended, out.takeBytes(), err.takeBytes(), killed, violations);
  }

  int _call(int r, String call) => _handle._sandbox._check(r, call);

  /// Writes to a `stdin: true` exec (or its pty); returns bytes written.
  int writeStdin(List<int> data) {
    _handle._checkOpen();
    return using((arena) {
      final buf = arena<Uint8>(data.isEmpty ? 1 : data.length);
      buf.asTypedList(data.length).setAll(0, data);
      return _call(_handle._b.ccsb_exec_write_stdin(_handle._ptr, id, buf.cast(), data.length),
          'ccsb_exec_write_stdin');
    });
  }

  void closeStdin() {
    _handle._checkOpen();
    _call(_handle._b.ccsb_exec_close_stdin(_handle._ptr, id), 'ccsb_exec_close_stdin');
  }

  /// Kills the exec's process group; a killed(manual) event follows.
  void kill() {
    _handle._checkOpen();
    _call(_handle._b.ccsb_exec_kill(_handle._ptr, id), 'ccsb_exec_kill');
  }

  void resize(int rows, int cols) {
    _handle._checkOpen();
    _call(_handle._b.ccsb_exec_resize_pty(_handle._ptr, id, rows, cols), 'ccsb_exec_resize_pty');
  }
}
