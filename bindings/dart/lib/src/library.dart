import 'dart:ffi';
import 'dart:io';

import 'ffi.dart';

/// Where libccsandbox is loaded from: an explicit path, `$CCSB_LIBRARY`,
/// then the system loader (`libccsandbox.so.1`, or `libccsandbox.1.dylib`).
class SandboxLibrary {
  SandboxLibrary._(this.path, this.bindings);

  final String path;
  final CcsbBindings bindings;

  /// Frees a context when its Sandbox is garbage collected unclosed.
  late final NativeFinalizer ctxFinalizer = NativeFinalizer(bindings.ccsb_ctx_free_ptr);

  /// Destroys a session when its SandboxHandle is garbage collected unclosed.
  late final NativeFinalizer sessionFinalizer = NativeFinalizer(bindings.ccsb_session_destroy_ptr);

  static SandboxLibrary? _default;

  /// The process-wide library, loaded on first use.
  static SandboxLibrary get instance => _default ??= open();

  /// Loads the library. An explicit [path] or `$CCSB_LIBRARY` that fails to
  /// load is an error, never skipped in favour of another copy.
  static SandboxLibrary open({String? path}) {
    final explicit = path ?? Platform.environment['CCSB_LIBRARY'];
    final candidates = explicit != null && explicit.isNotEmpty
        ? [explicit]
        : Platform.isMacOS
            ? ['libccsandbox.1.dylib', 'libccsandbox.dylib']
            : ['libccsandbox.so.1'];
    final errors = <String>[];
    for (final c in candidates) {
      try {
        final lib = SandboxLibrary._(c, CcsbBindings(DynamicLibrary.open(c)));
        // Resolve one symbol now so a wrong file fails here, not later.
        lib.bindings.ccsb_version_number();
        return lib;
      } on Object catch (e) {
        errors.add('$c: $e');
      }
    }
    throw StateError('libccsandbox not found (${errors.join('; ')}); '
        'set CCSB_LIBRARY to the path of libccsandbox.so.1');
  }

  /// Makes [lib] the library every Sandbox opened afterwards uses.
  static void use(SandboxLibrary lib) => _default = lib;
}
