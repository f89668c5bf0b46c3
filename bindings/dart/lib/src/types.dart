import 'constants.dart';

/// Which sandbox runs a session.
enum SandboxBackend {
  /// Unspecified: native when the host offers it, else none (with a log line).
  auto('auto', CCSB_BACKEND_AUTO),

  /// bubblewrap on Linux/WSL2, Seatbelt on macOS.
  native('native', CCSB_BACKEND_NATIVE),

  /// No isolation; the environment is still sanitised.
  none('none', CCSB_BACKEND_NONE),

  /// A microVM; asking for it where none can start fails loudly.
  microvm('microvm', CCSB_BACKEND_MICROVM);

  const SandboxBackend(this.wireName, this.value);

  /// The name in specs and stored settings.
  final String wireName;

  /// The CCSB_BACKEND_* value.
  final int value;

  /// Lenient parse of a *stored* name, like `ccsb_backend_from_name`: null
  /// or an unknown name is [none], the legacy name "docker" is [native].
  static SandboxBackend fromName(String? name) {
    switch (name) {
      case 'native':
      case 'docker':
        return SandboxBackend.native;
      case 'microvm':
        return SandboxBackend.microvm;
      case 'auto':
        return SandboxBackend.auto;
      default:
        return SandboxBackend.none;
    }
  }

  static SandboxBackend? fromValue(int v) {
    for (final b in values) {
      if (b.value == v) return b;
    }
    return null;
  }
}

/// What bind mounts may do in a session.
enum SandboxMode {
  chat('chat', CCSB_MODE_CHAT),
  review('review', CCSB_MODE_REVIEW),
  plan('plan', CCSB_MODE_PLAN),
  orchestrate('orchestrate', CCSB_MODE_ORCHESTRATE);

  const SandboxMode(this.wireName, this.value);
  final String wireName;
  final int value;
}

/// A session's lifecycle state.
enum SandboxState {
  created(CCSB_STATE_CREATED),
  warm(CCSB_STATE_WARM),
  active(CCSB_STATE_ACTIVE),
  suspended(CCSB_STATE_SUSPENDED),
  destroyed(CCSB_STATE_DESTROYED),
  error(CCSB_STATE_ERROR);

  const SandboxState(this.value);
  final int value;

  static SandboxState? fromValue(int v) {
    for (final s in values) {
      if (s.value == v) return s;
    }
    return null;
  }
}

/// Why the library killed an exec or a session.
enum SandboxKillReason {
  timeout(CCSB_KILL_TIMEOUT),
  oom(CCSB_KILL_OOM),
  manual(CCSB_KILL_MANUAL),
  host(CCSB_KILL_HOST);

  const SandboxKillReason(this.value);
  final int value;

  static SandboxKillReason? fromValue(int v) {
    for (final r in values) {
      if (r.value == v) return r;
    }
    return null;
  }
}

/// A host path visible in the sandbox at [guestPath] (default: the same).
class SandboxBindMount {
  const SandboxBindMount(this.hostPath, {this.guestPath, this.readOnly = false});

  factory SandboxBindMount.fromJson(Map<String, Object?> j) => SandboxBindMount(
        j['hostPath']! as String,
        guestPath: j['guestPath'] as String?,
        readOnly: (j['readOnly'] as bool?) ?? false,
      );

  final String hostPath;
  final String? guestPath;
  final bool readOnly;

  Map<String, Object?> toJson() => {
        'hostPath': hostPath,
        if (guestPath != null) 'guestPath': guestPath,
        'readOnly': readOnly,
      };

  @override
  bool operator ==(Object other) =>
      other is SandboxBindMount &&
      other.hostPath == hostPath &&
      other.guestPath == guestPath &&
      other.readOnly == readOnly;

  @override
  int get hashCode => Object.hash(hostPath, guestPath, readOnly);
}

/// What a session may see and do. Field names follow the JSON spec; a null
/// field takes the library's default. The library validates on launch and
/// names the offending field in its error.
class SandboxSpec {
  const SandboxSpec({
    this.sessionId,
    this.workspaceId,
    this.agentId,
    this.backend = SandboxBackend.auto,
    this.mode = SandboxMode.chat,
    this.guestWorkdir,
    this.bindMounts = const [],
    this.networkEnabled = true,
    this.egressAllowlist = const [],
    this.egressDenylist = const [],
    this.protectedPaths = const [],
    this.runnerStateDirs = const [],
    this.execGrantRoots = const [],
    this.denyRead = const [],
    this.denyWriteGlobs = const [],
    this.unixSockets = const [],
    this.allowGitConfig = false,
    this.upstreamProxy,
    this.env = const {},
    this.timeout,
    this.memoryBytes = 0,
    this.pids = 0,
  });

  factory SandboxSpec.fromJson(Map<String, Object?> j) {
    List<String> strings(String k) => [for (final s in (j[k] as List?) ?? const []) s as String];
    final limits = (j['limits'] as Map?)?.cast<String, Object?>() ?? const {};
    final ms = (limits['timeoutMs'] as int?) ?? 0;
    return SandboxSpec(
      sessionId: j['sessionId'] as String?,
      workspaceId: j['workspaceId'] as String?,
      agentId: j['agentId'] as String?,
      backend: SandboxBackend.values.firstWhere((b) => b.wireName == j['backend'],
          orElse: () => SandboxBackend.auto),
      mode: SandboxMode.values.firstWhere((m) => m.wireName == j['mode'],
          orElse: () => SandboxMode.chat),
      guestWorkdir: j['guestWorkdir'] as String?,
      bindMounts: [
        for (final m in (j['bindMounts'] as List?) ?? const [])
          SandboxBindMount.fromJson((m as Map).cast<String, Object?>())
      ],
      networkEnabled: (j['networkEnabled'] as bool?) ?? true,
      egressAllowlist: strings('egressAllowlist'),
      egressDenylist: strings('egressDenylist'),
      protectedPaths: strings('protectedPaths'),
      runnerStateDirs: strings('runnerStateDirs'),
      execGrantRoots: strings('execGrantRoots'),
      denyRead: strings('denyRead'),
      denyWriteGlobs: strings('denyWriteGlobs'),
      unixSockets: strings('unixSockets'),
      allowGitConfig: (j['allowGitConfig'] as bool?) ?? false,
      upstreamProxy: j['upstreamProxy'] as String?,
      env: ((j['env'] as Map?) ?? const {}).cast<String, String>(),
      timeout: ms > 0 ? Duration(milliseconds: ms) : null,
      memoryBytes: (limits['memoryBytes'] as int?) ?? 0,
      pids: (limits['pids'] as int?) ?? 0,
    );
  }

  final String? sessionId;
  final String? workspaceId;
  final String? agentId;
  final SandboxBackend backend;
  final SandboxMode mode;
  final String? guestWorkdir;
  final List<SandboxBindMount> bindMounts;
  final bool networkEnabled;
  final List<String> egressAllowlist;
  final List<String> egressDenylist;
  final List<String> protectedPaths;
  final List<String> runnerStateDirs;
  final List<String> execGrantRoots;
  final List<String> denyRead;
  final List<String> denyWriteGlobs;

  /// Host unix sockets the commands may connect to (turns on AF_UNIX).
  final List<String> unixSockets;
  final bool allowGitConfig;

  /// An HTTP proxy the host itself must use ("http://[user:password@]host:port");
  /// allowed connections are tunnelled through it.
  final String? upstreamProxy;
  final Map<String, String> env;

  /// The session's wall-clock limit (null: none).
  final Duration? timeout;
  final int memoryBytes;
  final int pids;

  /// The JSON the library parses (`ccsb_spec_from_json`).
  Map<String, Object?> toJson() => {
        'sessionId': sessionId,
        'workspaceId': workspaceId,
        'agentId': agentId,
        'backend': backend.wireName,
        'mode': mode.wireName,
        'guestWorkdir': guestWorkdir,
        'bindMounts': [for (final m in bindMounts) m.toJson()],
        'networkEnabled': networkEnabled,
        'egressAllowlist': egressAllowlist,
        'egressDenylist': egressDenylist,
        'protectedPaths': protectedPaths,
        'runnerStateDirs': runnerStateDirs,
        'execGrantRoots': execGrantRoots,
        'denyRead': denyRead,
        'denyWriteGlobs': denyWriteGlobs,
        'unixSockets': unixSockets,
        'allowGitConfig': allowGitConfig,
        'upstreamProxy': upstreamProxy,
        'env': env,
        'limits': {
          'timeoutMs': timeout?.inMilliseconds ?? 0,
          'memoryBytes': memoryBytes,
          'pids': pids,
        },
      };
}

/// What this host offers (copied from `ccsb_probe`).
class SandboxProbe {
  const SandboxProbe({
    required this.platform,
    required this.mechanism,
    required this.available,
    required this.requiresInstall,
    required this.note,
    required this.hint,
    required this.missingPackages,
    required this.microvmAvailable,
    required this.json,
    required this.startupMessage,
    required this.disabledMessage,
  });

  /// "linux", "wsl2", "macos" or "other".
  final String platform;

  /// "bubblewrap", "seatbelt" or "none".
  final String mechanism;

  /// The native backend works right now.
  final bool available;
  final bool requiresInstall;
  final String note;
  final String hint;
  final List<String> missingPackages;
  final bool microvmAvailable;
  final String json;

  /// The server's startup line: "agent sandbox ON (...)" or why not.
  final String startupMessage;

  /// The startup line for `--sandbox off`.
  final String disabledMessage;
}
