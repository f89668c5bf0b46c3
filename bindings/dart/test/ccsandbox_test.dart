// The C integration scenarios through the Dart binding: probe; launch;
// exec with stdout/stderr/exit; timeout; launchExec (session and first
// command in one call); endSession (the session ends itself after the
// command, none and native); prestart (an idle bubblewrap the next native
// launch takes; at most 4 wait; close ends those left); violation event
// from a denied write (native); denied egress (native + egress).
//
// Needs libccsandbox.so.1: CCSB_LIBRARY=<build>/lib/libccsandbox.so.1 dart test
import 'dart:io';

import 'package:ccsandbox/ccsandbox.dart';
import 'package:test/test.dart';

const none = SandboxSpec(backend: SandboxBackend.none);

/// (state letter, start time) of [p], or null once it is gone. The start
/// time tells a reused pid from the one we saw.
(String, String)? _stat(int p) {
  try {
    final t = File('/proc/$p/stat').readAsStringSync();
    final f = t.substring(t.lastIndexOf(')') + 1).trim().split(' ');
    return (f[0], f[19]);
  } on FileSystemException {
    return null;
  }
}

/// The live processes (pid -> start time) that have [marker] as an
/// argument; the host sees a sandbox's processes under their host pids.
Map<int, String> _withArg(String marker) {
  final out = <int, String>{};
  for (final e in Directory('/proc').listSync()) {
    final p = int.tryParse(e.path.substring('/proc/'.length));
    if (p == null) continue;
    List<int> cmdline;
    try {
      cmdline = File('/proc/$p/cmdline').readAsBytesSync();
    } on FileSystemException {
      continue; // ended meanwhile
    }
    if (!String.fromCharCodes(cmdline).split('\u0000').contains(marker)) continue;
    final st = _stat(p);
    if (st != null && st.$1 != 'Z') out[p] = st.$2;
  }
  return out;
}

/// The processes of [procs] alive now. A zombie is dead: reaping an orphan
/// is its new parent's job (the host's init, on none).
Set<int> _alive(Map<int, String> procs) => {
      for (final e in procs.entries)
        if (_stat(e.key) case (final st, final start) when start == e.value && st != 'Z') e.key
    };

/// The processes of [procs] still alive after [limit].
Future<Set<int>> _stillThere(Map<int, String> procs, Duration limit) =>
    _settle(() => _alive(procs), (Set<int> left) => left.isEmpty, limit: limit);

/// Pids of this process's children (every thread's: the library forks
/// from its loop thread, and its children move to another thread of ours
/// when that one ends).
Set<int> _children() {
  final out = <int>{};
  for (final t in Directory('/proc/self/task').listSync()) {
    try {
      out.addAll(File('${t.path}/children')
          .readAsStringSync()
          .split(RegExp(r'\s+'))
          .where((p) => p.isNotEmpty)
          .map(int.parse));
    } on FileSystemException {
      // that thread ended meanwhile
    }
  }
  return out;
}

/// Children not in [before] that are (or, as zombies, were) bubblewrap.
Set<int> _bwrapChildren(Set<int> before) => {
      for (final p in _children().difference(before))
        if (_comm(p) == 'bwrap') p
    };

String? _comm(int p) {
  try {
    return File('/proc/$p/comm').readAsStringSync().trim();
  } on FileSystemException {
    return null;
  }
}

/// Polls [probe] until [done] holds for its value or [limit] passed; the
/// last value.
Future<T> _settle<T>(T Function() probe, bool Function(T) done,
    {Duration limit = const Duration(seconds: 2)}) async {
  final sw = Stopwatch()..start();
  for (;;) {
    final v = probe();
    if (done(v) || sw.elapsed >= limit) return v;
    await Future<void>.delayed(const Duration(milliseconds: 20));
  }
}

void main() {
  late Sandbox sandbox;

  setUp(() => sandbox = Sandbox.open());
  tearDown(() => sandbox.close());

  group('names', () {
    test('fromName is lenient for stored names', () {
      expect(SandboxBackend.fromName(null), SandboxBackend.none);
      expect(SandboxBackend.fromName('nonsense'), SandboxBackend.none);
      expect(SandboxBackend.fromName('docker'), SandboxBackend.native);
      expect(SandboxBackend.fromName('native'), SandboxBackend.native);
      expect(SandboxBackend.fromName('microvm'), SandboxBackend.microvm);
    });

    test('spec JSON round-trips', () {
      const spec = SandboxSpec(
        sessionId: 'dart-spec',
        mode: SandboxMode.review,
        bindMounts: [SandboxBindMount('/srv/repo', guestPath: '/repo', readOnly: true)],
        egressAllowlist: ['*.example.com'],
        env: {'LANG': 'C.UTF-8'},
        timeout: Duration(seconds: 5),
      );
      final again = SandboxSpec.fromJson(spec.toJson());
      expect(again.toJson(), spec.toJson());
      expect(again.bindMounts.single, spec.bindMounts.single);
    });
  });

  test('probe reports the host', () async {
    final pr = await sandbox.probe();
    expect(['linux', 'wsl2', 'macos', 'other'], contains(pr.platform));
    expect(pr.note, isNotEmpty);
    expect(pr.disabledMessage, 'agent sandbox DISABLED by --sandbox off');
    expect(pr.startupMessage,
        pr.available ? startsWith('agent sandbox ON (') : startsWith('no OS-native agent sandbox'));
  });

  test('launch reports backend, state and its first events', () async {
    final h = await sandbox.launch(const SandboxSpec(sessionId: 'dart-launch', backend: SandboxBackend.none));
    expect(h.sessionId, 'dart-launch');
    expect(h.backend, SandboxBackend.none);
    expect(h.state, SandboxState.warm);
    expect(h.launchEvents.whereType<SandboxStarting>(), isNotEmpty);
    expect(h.launchEvents.whereType<SandboxReady>(), isNotEmpty);
    h.close();
  });

  test('exec: stdout, stderr, exit code', () async {
    final h = await sandbox.launch(none);
    final r = await h.run(['sh', '-c', 'echo out; echo err >&2; exit 3']).timeout(const Duration(seconds: 10));
    expect(r.exitCode, 3);
    expect(r.signal, 0);
    expect(r.stdoutText, 'out\n');
    expect(r.stderrText, 'err\n');
    h.close();
  });

  test('events stream ends with the exit', () async {
    final h = await sandbox.launch(none);
    final x = h.exec(['sh', '-c', 'echo a; echo b >&2']);
    final events = await x.events.toList();
    expect(events.last, isA<SandboxExit>());
    expect(events.whereType<SandboxOutput>().length, greaterThanOrEqualTo(2));
    h.close();
  });

  test('timeout kills the exec', () async {
    final h = await sandbox.launch(none);
    final sw = Stopwatch()..start();
    final r = await h.run(['sh', '-c', 'sleep 30 & sleep 30'], timeout: const Duration(milliseconds: 300));
    expect(sw.elapsed, lessThan(const Duration(seconds: 3)));
    expect(r.killed, SandboxKillReason.timeout);
    expect(r.signal, 9);
    h.close();
  });

  test('stdin pipe and kill', () async {
    final h = await sandbox.launch(none);
    final x = h.exec(['tr', 'a-z', 'A-Z'], stdin: true);
    expect(x.writeStdin('hello'.codeUnits), 5);
    x.closeStdin();
    expect((await x.collect()).stdoutText, 'HELLO');
    final y = h.exec(['sleep', '30']);
    y.kill();
    expect((await y.collect()).killed, SandboxKillReason.manual);
    h.close();
  });

  test('microvm never falls back', () async {
    await expectLater(
        sandbox.launch(const SandboxSpec(backend: SandboxBackend.microvm)),
        throwsA(isA<SandboxException>()
            .having((e) => e.code, 'code', CCSB_E_UNAVAILABLE)
            .having((e) => e.message, 'message', contains('microvm'))));
  });

  test('an invalid spec names the field', () async {
    await expectLater(
        sandbox.launch(const SandboxSpec(
            backend: SandboxBackend.none, bindMounts: [SandboxBindMount('relative/path')])),
        throwsA(isA<SandboxException>()
            .having((e) => e.code, 'code', CCSB_E_SPEC)
            .having((e) => e.message, 'message', contains('bindMounts[0].hostPath'))));
  });

  group('launchExec', () {
    test('the command runs and its events carry the returned exec id', () async {
      final (h, x) = await sandbox.launchExec(
          const SandboxSpec(sessionId: 'dart-le', backend: SandboxBackend.none),
          ['sh', '-c', 'echo out; echo err >&2; exit 3']);
      expect(h.sessionId, 'dart-le');
      expect(x.id, greaterThan(0));
      final events = await x.events.toList().timeout(const Duration(seconds: 10));
      expect(events.every((e) => e.sessionId == 'dart-le' && e.execId == x.id), isTrue, reason: '$events');
      expect(events.last, isA<SandboxExit>().having((e) => e.exitCode, 'exitCode', 3));
      String text(bool stderr) => String.fromCharCodes(events
          .whereType<SandboxOutput>()
          .where((o) => o.isStderr == stderr)
          .expand((o) => o.data));
      expect(text(false), 'out\n');
      expect(text(true), 'err\n');
      expect(h.launchEvents.every((e) => e.execId == 0), isTrue);
      expect(h.launchEvents.whereType<SandboxReady>(), isNotEmpty);
      final more = await h.run(['echo', 'again']);
      expect(more.stdoutText, 'again\n');
      h.close();
    });

    test('exec arguments reach the first command', () async {
      final (h, x) = await sandbox.launchExec(none, ['sh', '-c', r'pwd; echo "$GREETING"; tr a-z A-Z'],
          env: {'GREETING': 'hej'}, cwd: '/', stdin: true);
      expect(x.writeStdin('piped'.codeUnits), 5);
      x.closeStdin();
      final r = await x.collect().timeout(const Duration(seconds: 10));
      expect(r.stdoutText, '/\nhej\nPIPED');
      h.close();
      final (h2, y) = await sandbox.launchExec(none, ['sleep', '30'], timeout: const Duration(milliseconds: 300));
      expect((await y.collect().timeout(const Duration(seconds: 10))).killed, SandboxKillReason.timeout);
      h2.close();
    });

    test('an empty argv throws before anything starts', () async {
      await expectLater(sandbox.launchExec(none, const []), throwsArgumentError);
      await expectLater(sandbox.launchExec(none, const ['a\u0000b']), throwsArgumentError);
    });

    test('a bad spec names the field and leaves no session', () async {
      await expectLater(
          sandbox.launchExec(
              const SandboxSpec(
                  sessionId: 'dart-le-bad',
                  backend: SandboxBackend.none,
                  bindMounts: [SandboxBindMount('relative/path')]),
              ['true']),
          throwsA(isA<SandboxException>()
              .having((e) => e.code, 'code', CCSB_E_SPEC)
              .having((e) => e.call, 'call', 'ccsb_launch_exec')
              .having((e) => e.message, 'message', contains('bindMounts[0].hostPath'))));
      // The id was never taken.
      final (h, x) = await sandbox.launchExec(
          const SandboxSpec(sessionId: 'dart-le-bad', backend: SandboxBackend.none), ['true']);
      expect((await x.exit).exitCode, 0);
      h.close();
    });

    test('microvm never falls back', () async {
      await expectLater(
          sandbox.launchExec(const SandboxSpec(backend: SandboxBackend.microvm), ['true']),
          throwsA(isA<SandboxException>()
              .having((e) => e.code, 'code', CCSB_E_UNAVAILABLE)
              .having((e) => e.message, 'message', contains('microvm'))));
    });
  });

  group('endSession', () {
    const limit = Duration(seconds: 10);
    final markers = <String>[];
    // A `sleep` argument no other process has.
    String marker() {
      final m = '${800000 + markers.length}.$pid';
      markers.add(m);
      return m;
    }

    // A failed test must not leave its week-long sleep behind.
    tearDown(() {
      for (final m in markers) {
        for (final p in _withArg(m).keys) {
          Process.killPid(p, ProcessSignal.sigkill);
        }
      }
    });

    List<String> script(String m) => ['sh', '-c', 'sleep $m & echo started; read go; echo last; exit 6'];

    // The command's background sleep, once it runs.
    Future<Map<int, String>> background(String m) async {
      final procs = await _settle(() => _withArg(m), (Map<int, String> p) => p.isNotEmpty, limit: limit);
      expect(procs, hasLength(1), reason: 'the background sleep is not running');
      return procs;
    }

    // Lets the command finish; then the session reads destroyed (after the
    // exit, never error), the sleep it left is gone, nothing more runs.
    Future<void> endsItself(SandboxHandle h, SandboxExec x, Map<int, String> procs) async {
      final seen = <SandboxEvent>[];
      final sub = h.events.listen(seen.add);
      final destroyed = h.events
          .firstWhere((e) => e is SandboxStateChanged && e.state == SandboxState.destroyed)
          .timeout(limit);
      x.writeStdin('go\n'.codeUnits);
      final r = await x.collect().timeout(limit);
      expect(r.exitCode, 6);
      expect(r.stdoutText, 'started\nlast\n');
      final d = await destroyed;
      await sub.cancel();
      expect(r.exit.timestampUs, lessThanOrEqualTo(d.timestampUs));
      expect(seen.whereType<SandboxError>(), isEmpty, reason: '$seen');
      expect(seen.whereType<SandboxStateChanged>().where((e) => e.state == SandboxState.error), isEmpty);
      expect(h.state, SandboxState.destroyed);
      expect(h.error, '');
      expect(await _stillThere(procs, limit), isEmpty, reason: "the command's background sleep survived");
      expect(() => h.exec(['true']),
          throwsA(isA<SandboxException>().having((e) => e.code, 'code', CCSB_E_STATE)));
      h.close();
    }

    for (final backend in [SandboxBackend.none, SandboxBackend.native]) {
      final spec = SandboxSpec(backend: backend);
      Future<bool> usable() async {
        if (backend != SandboxBackend.native) return true;
        final pr = await sandbox.probe();
        if (!pr.available) markTestSkipped('native backend unavailable here: ${pr.hint}');
        return pr.available;
      }

      test('${backend.wireName}: exec with endSession ends the session', () async {
        if (!await usable()) return;
        final h = await sandbox.launch(spec);
        expect((await h.run(['echo', 'warm'])).stdoutText, 'warm\n');
        final m = marker();
        final x = h.exec(script(m), stdin: true, endSession: true);
        await endsItself(h, x, await background(m));
      });

      test('${backend.wireName}: launchExec with endSession is a one-shot run', () async {
        if (!await usable()) return;
        final m = marker();
        final (h, x) = await sandbox.launchExec(spec, script(m), stdin: true, endSession: true);
        await endsItself(h, x, await background(m));
      });

      test('${backend.wireName}: without endSession the session stays warm', () async {
        if (!await usable()) return;
        final h = await sandbox.launch(spec);
        final m = marker();
        final x = h.exec(script(m), stdin: true);
        final procs = await background(m);
        x.writeStdin('go\n'.codeUnits);
        expect((await x.collect().timeout(limit)).exitCode, 6);
        await _settle(() => h.state, (SandboxState st) => st == SandboxState.warm, limit: limit);
        expect(h.state, SandboxState.warm);
        expect(await _stillThere(procs, const Duration(milliseconds: 200)), hasLength(1),
            reason: 'the background sleep was killed with no endSession');
        expect((await h.run(['echo', 'again'])).stdoutText, 'again\n');
        // Closing the session is what ends the sleep then.
        h.close();
        expect(await _stillThere(procs, limit), isEmpty);
      });
    }
  });

  group('prestart', () {
    const maxWaiting = 4; // the library's limit (header: "at most 4 wait")

    // The first prestart; false (the test skipped) where the host has
    // nothing to start ahead.
    bool first() {
      try {
        sandbox.prestart();
        return true;
      } on SandboxException catch (e) {
        if (e.code != CCSB_E_UNAVAILABLE) rethrow;
        markTestSkipped('nothing to prestart on this host: $e');
        return false;
      }
    }

    // n more prestarts, which must all be accepted.
    void fill(int n) {
      for (var i = 0; i < n; i++) {
        sandbox.prestart();
      }
    }

    void expectFull() {
      expect(
          () => sandbox.prestart(),
          throwsA(isA<SandboxException>()
              .having((e) => e.code, 'code', CCSB_E_STATE)
              .having((e) => e.call, 'call', 'ccsb_ctx_prestart')
              .having((e) => e.message, 'message', contains('already wait'))));
    }

    Future<bool> nativeUsable() async {
      final pr = await sandbox.probe();
      if (!pr.available) markTestSkipped('native backend unavailable here: ${pr.hint}');
      return pr.available;
    }

    test('a native launch runs on the prestarted bwrap and takes it', () async {
      if (!await nativeUsable() || !first()) return;
      final SandboxHandle h;
      try {
        h = await sandbox.launch(const SandboxSpec(sessionId: 'dart-prestart', backend: SandboxBackend.native));
      } on SandboxException catch (e) {
        if (e.code != CCSB_E_UNAVAILABLE && e.code != CCSB_E_UNSUPPORTED) rethrow;
        markTestSkipped('native backend not in this build: $e');
        return;
      }
      expect(h.backend, SandboxBackend.native);
      final r = await h.run(['true']).timeout(const Duration(seconds: 30));
      expect(r.exitCode, 0, reason: r.stderrText);
      expect(r.signal, 0);
      expect(r.killed, isNull);
      h.close();
      // The launch took the one waiting: 4 fit again, not 3.
      fill(maxWaiting);
      expectFull();
    });

    test('the fifth waiting prestart is refused', () {
      if (!first()) return;
      fill(maxWaiting - 1);
      expectFull();
      // Still full: a refused call adds nothing and frees no slot.
      expectFull();
    });

    test('close ends every untaken bwrap', () async {
      if (!await nativeUsable()) return;
      final before = _children();
      if (!first()) return;
      fill(maxWaiting - 1);
      // Started on the library's thread, without the call waiting for it.
      final started = await _settle(() => _bwrapChildren(before), (Set<int> s) => s.length >= maxWaiting);
      expect(started, hasLength(maxWaiting), reason: 'bubblewrap children: $started');
      await sandbox.close();
      // Gone means reaped too: a zombie is still listed as our child.
      final left = await _settle(
          () => {..._bwrapChildren(before), ..._children().intersection(started)}, (Set<int> s) => s.isEmpty);
      expect(left, isEmpty, reason: 'bubblewrap left after close');
      expect(() => sandbox.prestart(), throwsStateError);
    });
  });

  group('native', () {
    Future<SandboxHandle?> native(SandboxSpec spec) async {
      final pr = await sandbox.probe();
      if (!pr.available) {
        markTestSkipped('native backend unavailable here: ${pr.hint}');
        return null;
      }
      try {
        return await sandbox.launch(spec);
      } on SandboxException catch (e) {
        if (e.code == CCSB_E_UNAVAILABLE || e.code == CCSB_E_UNSUPPORTED) {
          markTestSkipped('native backend not in this build: $e');
          return null;
        }
        rethrow;
      }
    }

    test('a denied write is a violation event', () async {
      final h = await native(const SandboxSpec(backend: SandboxBackend.native));
      if (h == null) return;
      final target = '/usr/ccsb-dart-denied-$pid';
      final seen = <SandboxViolation>[];
      final sub = h.violations.listen(seen.add);
      final r = await h.run(['sh', '-c', 'echo x > $target']);
      await sub.cancel();
      expect(r.exitCode, isNot(0));
      expect(File(target).existsSync(), isFalse);
      final all = [...r.violations, ...seen];
      expect(all.any((v) => v.target.contains(target) || v.raw.contains(target)), isTrue, reason: '$all');
      h.close();
    });

    test('denied egress is refused with a violation', () async {
      final h = await native(const SandboxSpec(backend: SandboxBackend.native));
      if (h == null) return;
      final proxy = (await h.run(['sh', '-c', r'echo "${HTTP_PROXY:-}"'])).stdoutText.trim();
      if (proxy.isEmpty) {
        markTestSkipped('egress proxies not in this build');
        h.close();
        return;
      }
      final seen = <SandboxViolation>[];
      final sub = h.violations.listen(seen.add);
      const client = 'import os,socket,urllib.parse as u\n'
          "p=u.urlsplit(os.environ['HTTP_PROXY'])\n"
          'c=socket.create_connection((p.hostname,p.port),5)\n'
          r"c.sendall(b'CONNECT ccsb-denied.invalid:443 HTTP/1.1\r\nHost: ccsb-denied.invalid:443\r\n\r\n')"
          '\n'
          r"print(c.recv(200).split(b'\r\n')[0].decode())"
          '\n';
      final r = await h.run(['/usr/bin/python3', '-c', client]);
      await sub.cancel();
      expect(r.stdoutText, contains(' 403'));
      expect(
          [...r.violations, ...seen]
              .any((v) => v.action == 'network-outbound' && v.target.contains('ccsb-denied.invalid')),
          isTrue);
      h.close();
    });
  });
}
