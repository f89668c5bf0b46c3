// A minimal agent server: POST /run with {"argv": ["sh", "-c", "..."]} runs
// the command in a fresh sandbox session and streams its output back.
// Listens on 127.0.0.1 only.
//
//   CCSB_LIBRARY=<build>/lib/libccsandbox.so.1 dart run example/server.dart
//   curl -s localhost:8080/run -d '{"argv":["sh","-c","echo hi; id"]}'
import 'dart:convert';
import 'dart:io';

import 'package:ccsandbox/ccsandbox.dart';

Future<void> main(List<String> args) async {
  final sandbox = Sandbox.open();
  final probe = await sandbox.probe();
  stderr.writeln(probe.startupMessage);
  final spec = SandboxSpec(
    backend: probe.available ? SandboxBackend.native : SandboxBackend.none,
    bindMounts: [SandboxBindMount(Directory.current.path)],
    guestWorkdir: Directory.current.path,
    timeout: const Duration(minutes: 5),
  );

  final server = await HttpServer.bind(InternetAddress.loopbackIPv4, 8080);
  ProcessSignal.sigint.watch().first.then((_) async {
    await server.close(force: true);
    await sandbox.close();
  });
  stderr.writeln('listening on http://127.0.0.1:8080');

  await for (final req in server) {
    if (req.method != 'POST' || req.uri.path != '/run') {
      req.response.statusCode = HttpStatus.notFound;
      await req.response.close();
      continue;
    }
    final body = jsonDecode(await utf8.decodeStream(req)) as Map<String, Object?>;
    final argv = (body['argv'] as List).cast<String>();
    final session = await sandbox.launch(spec);
    final sub = session.violations.listen((v) => stderr.writeln('violation: ${v.action} ${v.target}'));
    req.response.headers.contentType = ContentType.text;
    final exec = session.exec(argv, timeout: const Duration(seconds: 60));
    await for (final ev in exec.events) {
      switch (ev) {
        case SandboxOutput(:final data):
          req.response.add(data);
        case SandboxExit(:final exitCode, :final signal):
          req.response.write('\n[exit $exitCode signal $signal]\n');
        default:
          break;
      }
    }
    await sub.cancel();
    session.close();
    await req.response.close();
  }
}
