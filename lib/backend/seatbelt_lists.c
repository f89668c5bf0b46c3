/*
 * The macOS backend's fixed lists. Keep one entry a line with its reason;
 * docs/seatbelt.md mirrors them.
 */
#include "backend/seatbelt_lists.h"

#include <stddef.h>

const struct seatbelt_entry seatbelt_dangerous_binaries[] = {
    {"/usr/bin/osascript", "AppleScript/JXA drives other apps (Terminal, System Events) outside the sandbox"},
    {"/usr/bin/osacompile", "builds AppleScript applets that run outside the sandbox"},
    {"/usr/bin/open", "asks LaunchServices to start apps and URLs outside the sandbox"},
    {"/bin/launchctl", "submits jobs that launchd runs outside the sandbox"},
    {"/usr/bin/automator", "runs Automator workflows outside the sandbox"},
    {"/usr/bin/shortcuts", "runs Shortcuts outside the sandbox"},
    {"/usr/bin/crontab", "schedules commands that cron runs later, unsandboxed"},
    {"/usr/bin/at", "schedules commands that atrun runs later, unsandboxed"},
    {"/usr/bin/batch", "same as at"},
    {"/usr/bin/sudo", "privilege escalation"},
    {"/usr/bin/su", "privilege escalation"},
    {"/usr/bin/login", "privilege escalation"},
    {"/usr/bin/security", "reads keychain passwords, keys and certificates"},
    {"/usr/bin/tccutil", "changes the privacy (TCC) grants of other apps"},
    {"/usr/sbin/networksetup", "changes the system's network and proxy settings"},
    {"/usr/bin/pbpaste", "reads the user's clipboard, which often holds secrets"},
    {"/usr/bin/pbcopy", "plants text the user may paste into a shell outside the sandbox"},
    {"/usr/sbin/screencapture", "captures the user's screen"},
    {NULL, NULL},
};

const struct seatbelt_entry seatbelt_writable_devices[] = {
    {"/dev/null", "discarding output"},
    {"/dev/zero", "mmap and dd idioms"},
    {"/dev/tty", "the controlling terminal (password prompts, ssh, less)"},
    {"/dev/stdout", "shell redirections to the standard streams"},
    {"/dev/stderr", "shell redirections to the standard streams"},
    {"/dev/dtracehelper", "dyld registers every process with DTrace here"},
    {"/dev/ptmx", "creating a pseudo-terminal (script, expect, tmux)"},
    {NULL, NULL},
};

const struct seatbelt_entry seatbelt_log_noise[] = {
    {"network-outbound", "/private/var/run/mDNSResponder"}, /* resolver retries; DNS itself is allowed */
    {"network-outbound", "/private/var/run/syslog"},        /* libc syslog(3) falls back silently */
    {"network-outbound", "/private/var/run/asl_input"},     /* legacy ASL logging */
    {"mach-lookup", "com.apple.diagnosticd"},
    {"mach-lookup", "com.apple.analyticsd"},
    {"file-write-data", "/dev/dtracehelper"},
    {NULL, NULL},
};
