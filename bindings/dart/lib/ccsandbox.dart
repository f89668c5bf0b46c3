/// dart:ffi bindings for libccsandbox: run an AI coding agent's commands
/// inside an OS sandbox. See README.md (untested here: no Dart SDK on the
/// machine these bindings were written on).
library ccsandbox;

export 'src/constants.dart';
export 'src/errors.dart' show SandboxException;
export 'src/events.dart';
export 'src/library.dart' show SandboxLibrary;
export 'src/sandbox.dart' show Sandbox, SandboxHandle, SandboxExec, SandboxExecResult;
export 'src/types.dart';
