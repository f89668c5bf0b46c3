import 'dart:typed_data';

import 'types.dart';

/// One event from the library, copied into Dart memory (the C event is freed
/// at once). Switch over the subclasses; the set is sealed.
sealed class SandboxEvent {
  const SandboxEvent(this.sessionId, this.execId, this.timestampUs);

  final String sessionId;

  /// The exec the event belongs to; 0 for session-level events.
  final int execId;

  /// Microseconds since the Unix epoch.
  final int timestampUs;

  DateTime get time => DateTime.fromMicrosecondsSinceEpoch(timestampUs, isUtc: true);
}

/// A session began starting; [message] names the backend.
final class SandboxStarting extends SandboxEvent {
  const SandboxStarting(super.sessionId, super.execId, super.timestampUs, this.message);
  final String message;
}

/// The session is warm.
final class SandboxReady extends SandboxEvent {
  const SandboxReady(super.sessionId, super.execId, super.timestampUs, this.message);
  final String message;
}

/// Bytes from an exec's stdout (or pty) or stderr.
final class SandboxOutput extends SandboxEvent {
  const SandboxOutput(super.sessionId, super.execId, super.timestampUs,
      {required this.isStderr, required this.data});
  final bool isStderr;
  final Uint8List data;
}

/// An exec ended: [exitCode], or -1 with the terminating [signal].
final class SandboxExit extends SandboxEvent {
  const SandboxExit(super.sessionId, super.execId, super.timestampUs,
      {required this.exitCode, required this.signal});
  final int exitCode;
  final int signal;
  bool get success => exitCode == 0 && signal == 0;
}

/// The library killed an exec (execId != 0) or the session.
final class SandboxKilled extends SandboxEvent {
  const SandboxKilled(super.sessionId, super.execId, super.timestampUs,
      {required this.reason, required this.message});
  final SandboxKillReason? reason;
  final String message;
}

/// The policy refused something: [action] ("file-write",
/// "file-write-create", "network-outbound", ...), [target] (path or
/// host:port as the sandbox saw it) and the [raw] evidence.
final class SandboxViolation extends SandboxEvent {
  const SandboxViolation(super.sessionId, super.execId, super.timestampUs,
      {required this.action, required this.target, required this.raw});
  final String action;
  final String target;
  final String raw;

  @override
  String toString() => 'SandboxViolation($action $target)';
}

/// The session changed state.
final class SandboxStateChanged extends SandboxEvent {
  const SandboxStateChanged(super.sessionId, super.execId, super.timestampUs,
      {required this.state, required this.message});
  final SandboxState? state;
  final String message;
}

/// An asynchronous error in the session.
final class SandboxError extends SandboxEvent {
  const SandboxError(super.sessionId, super.execId, super.timestampUs, this.message);
  final String message;
}

/// An event type this version of the bindings does not know.
final class SandboxUnknownEvent extends SandboxEvent {
  const SandboxUnknownEvent(super.sessionId, super.execId, super.timestampUs, this.type);
  final int type;
}
