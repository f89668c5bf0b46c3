import 'constants.dart';

const _names = <int, String>{
  CCSB_E_INVAL: 'CCSB_E_INVAL',
  CCSB_E_NOMEM: 'CCSB_E_NOMEM',
  CCSB_E_SPEC: 'CCSB_E_SPEC',
  CCSB_E_UNAVAILABLE: 'CCSB_E_UNAVAILABLE',
  CCSB_E_POLICY: 'CCSB_E_POLICY',
  CCSB_E_STATE: 'CCSB_E_STATE',
  CCSB_E_NOTFOUND: 'CCSB_E_NOTFOUND',
  CCSB_E_IO: 'CCSB_E_IO',
  CCSB_E_AGAIN: 'CCSB_E_AGAIN',
  CCSB_E_REENTRANT: 'CCSB_E_REENTRANT',
  CCSB_E_LAUNCH: 'CCSB_E_LAUNCH',
  CCSB_E_INTERNAL: 'CCSB_E_INTERNAL',
  CCSB_E_UNSUPPORTED: 'CCSB_E_UNSUPPORTED',
  CCSB_E_TIMEDOUT: 'CCSB_E_TIMEDOUT',
};

/// A failed library call: the negative `CCSB_E_*` [code], its symbol
/// [name], the C function that failed and the library's [message] (which
/// names the field for spec errors).
class SandboxException implements Exception {
  SandboxException(this.code, this.call, this.message);

  final int code;
  final String call;
  final String message;

  String get name => _names[code] ?? 'CCSB_E_$code';

  bool get isSpecError => code == CCSB_E_SPEC;
  bool get isUnavailable => code == CCSB_E_UNAVAILABLE;
  bool get isTimeout => code == CCSB_E_TIMEDOUT;

  @override
  String toString() => 'SandboxException($name) $call: $message';
}
