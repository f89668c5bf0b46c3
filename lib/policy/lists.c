/*
 * The built-in policy lists. Keep every list here, one entry a line, with a
 * word on why; docs/policy-lists.md mirrors them for users and
 * tests/unit/policy/test_lists_doc.c fails when the two drift apart.
 */
#include "policy/lists.h"

#include <stddef.h>
#include <string.h>

#define GITCFG POLICY_ENTRY_GIT_CONFIG

const struct policy_entry policy_deny_write_root[] = {
    /* Shell start-up files: run by the next interactive or login shell. */
    {".bashrc", "shell", 0},
    {".bash_profile", "shell", 0},
    {".bash_login", "shell", 0},
    {".bash_logout", "shell", 0},
    {".bash_aliases", "shell", 0},
    {".profile", "shell", 0},
    {".zshrc", "shell", 0},
    {".zprofile", "shell", 0},
    {".zshenv", "shell", 0},
    {".zlogin", "shell", 0},
    {".zlogout", "shell", 0},
    {".kshrc", "shell", 0},
    {".cshrc", "shell", 0},
    {".tcshrc", "shell", 0},
    {".login", "shell", 0},
    {".logout", "shell", 0},
    {".config/fish", "shell", 0},
    /* Desktop and login session start-up. */
    {".pam_environment", "session", 0},
    {".xprofile", "session", 0},
    {".xinitrc", "session", 0},
    {".xsession", "session", 0},
    {".xsessionrc", "session", 0},
    {".config/autostart", "session", 0},
    {".config/systemd", "session", 0},
    {".config/environment.d", "session", 0},
    /* Git: global configuration and the submodule list (URLs and paths git
     * acts on when the host runs `git submodule update`). */
    {".gitconfig", "git", 0},
    {".config/git", "git", 0},
    {".gitmodules", "git", 0},
    /* SSH client configuration (ProxyCommand) and authorized keys. */
    {".ssh", "ssh", 0},
    /* Coding-agent configuration: MCP servers, hooks and permissions. */
    {".claude", "agent", 0},
    {".claude.json", "agent", 0},
    {".codex", "agent", 0},
    {".cursor", "agent", 0},
    {".gemini", "agent", 0},
    {".continue", "agent", 0},
    {".mcp.json", "agent", 0},
    {".aider.conf.yml", "agent", 0},
    /* Editor configuration that runs commands (tasks, init files). */
    {".vscode", "editor", 0},
    {".idea", "editor", 0},
    {".devcontainer", "editor", 0},
    {".vimrc", "editor", 0},
    {".exrc", "editor", 0},
    {".config/nvim", "editor", 0},
    {".emacs", "editor", 0},
    {".emacs.d", "editor", 0},
    /* direnv runs .envrc when a shell enters the directory. */
    {".envrc", "direnv", 0},
    {".config/direnv", "direnv", 0},
    {NULL, NULL, 0},
};

const struct policy_entry policy_deny_write_gitdir[] = {
    {"hooks", "git", 0},               /* run by git on the host */
    {"config", "git", GITCFG},         /* core.hooksPath, core.fsmonitor, aliases */
    {"config.worktree", "git", GITCFG},
    {"worktrees/*/config.worktree", "git", GITCFG},
    {"modules", "git", 0},             /* submodule git dirs: their own hooks and config */
    /* Names the directory git takes config and hooks from instead. */
    {"commondir", "git", 0},
    {NULL, NULL, 0},
};

const struct policy_entry policy_secret_home[] = {
    {".ssh", "ssh", 0},
    {".gnupg", "gpg", 0},
    {".aws", "cloud", 0},
    {".azure", "cloud", 0},
    {".config/gcloud", "cloud", 0},
    {".oci", "cloud", 0},
    {".kube", "cloud", 0},
    {".docker/config.json", "registry", 0},
    {".config/containers/auth.json", "registry", 0},
    {".npmrc", "registry", 0},
    {".pypirc", "registry", 0},
    {".cargo/credentials*", "registry", 0},
    {".gem/credentials", "registry", 0},
    {".m2/settings.xml", "registry", 0},
    {".gradle/gradle.properties", "registry", 0},
    {".composer/auth.json", "registry", 0},
    {".netrc", "git", 0},
    {".git-credentials", "git", 0},
    {".config/git/credentials", "git", 0},
    {".config/gh", "git", 0},
    {".config/hub", "git", 0},
    {".pgpass", "database", 0},
    {".my.cnf", "database", 0},
    {".vault-token", "token", 0},
    {".terraform.d/credentials.tfrc.json", "token", 0},
    {".config/rclone", "token", 0},
    {".claude/.credentials.json", "agent", 0},
    {".codex/auth.json", "agent", 0},
    {".config/github-copilot", "agent", 0},
    {".password-store", "keychain", 0},
    {".local/share/keyrings", "keychain", 0},
    {"Library/Keychains", "keychain", 0},
    {".bash_history", "history", 0},
    {".zsh_history", "history", 0},
    {".psql_history", "history", 0},
    {".mysql_history", "history", 0},
    {".mozilla", "browser", 0},
    {".config/google-chrome", "browser", 0},
    {".config/chromium", "browser", 0},
    {"Library/Cookies", "browser", 0},
    {"Library/Application Support/Google/Chrome", "browser", 0},
    {"Library/Application Support/Firefox", "browser", 0},
    {NULL, NULL, 0},
};

const struct policy_entry policy_secret_system[] = {
    {"/etc/shadow", "passwords", 0},
    {"/etc/shadow-", "passwords", 0},
    {"/etc/gshadow", "passwords", 0},
    {"/etc/gshadow-", "passwords", 0},
    {"/etc/master.passwd", "passwords", 0},
    {"/etc/security/opasswd", "passwords", 0},
    {"/etc/sudoers", "sudo", 0},
    {"/etc/sudoers.d", "sudo", 0},
    {"/etc/ssh/ssh_host_*_key", "hostkey", 0},
    {"/etc/ssl/private", "tls", 0},
    {"/etc/pki/tls/private", "tls", 0},
    {"/etc/letsencrypt", "tls", 0},
    {"/etc/krb5.keytab", "kerberos", 0},
    {"/etc/ipsec.secrets", "vpn", 0},
    {"/etc/ppp/chap-secrets", "vpn", 0},
    {"/etc/ppp/pap-secrets", "vpn", 0},
    {"/etc/wireguard", "vpn", 0},
    {"/etc/openvpn", "vpn", 0},
    {"/etc/NetworkManager/system-connections", "wifi", 0},
    {"/etc/wpa_supplicant", "wifi", 0},
    {"/etc/mysql/debian.cnf", "database", 0},
    {NULL, NULL, 0},
};

const char *const policy_env_strip[] = {
    /* dynamic linker injection (LD_* and DYLD_* go by prefix as well) */
    "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "LD_DEBUG", "LD_DEBUG_OUTPUT",
    "LD_PROFILE", "LD_ORIGIN_PATH", "LD_DYNAMIC_WEAK", "LD_BIND_NOW",
    "LD_USE_LOAD_BIAS", "LD_SHOW_AUXV", "LD_HWCAP_MASK", "GCONV_PATH",
    "MALLOC_CHECK_", "MALLOC_TRACE", "GLIBC_TUNABLES", "HOSTALIASES",
    "LOCALDOMAIN", "RES_OPTIONS", "NLSPATH",
    /* shells */
    "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4",
    "IFS", "CDPATH", "GLOBIGNORE", "ZDOTDIR",
    /* interpreters and runtimes */
    "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE",
    "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONINSPECT",
    "PYTHONUSERBASE", "PYTHONBREAKPOINT", "PYTHONWARNINGS",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "PERL_MB_OPT", "PERL_MM_OPT",
    "RUBYOPT", "RUBYLIB", "GEM_PATH",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
    "DOTNET_STARTUP_HOOKS", "CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER",
    "CORECLR_PROFILER_PATH",
    "LUA_INIT", "LUA_PATH", "LUA_CPATH", "TCLLIBPATH", "PHPRC", "PHP_INI_SCAN_DIR",
    /* programs run on the command's behalf */
    "LESSOPEN", "LESSCLOSE",
    /* git runs programs named by these, or acts on another repository */
    "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS",
    "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_PROXY_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_TEMPLATE_DIR",
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    /* credentials and agent sockets the sandbox must not inherit */
    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "KRB5CCNAME",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AZURE_CLIENT_SECRET", "GOOGLE_APPLICATION_CREDENTIALS",
    "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "NPM_TOKEN",
    "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
    NULL,
};

const char *const policy_env_strip_prefixes[] = {
    "DYLD_",        /* macOS dynamic linker */
    "LD_",          /* any other glibc loader knob */
    "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", /* per-key git config injection */
    "BASH_FUNC_",   /* exported shell functions (shellshock-style) */
    NULL,
};

const char *const policy_env_forbidden_prefixes[] = {
    "LD_",   /* glibc/musl loader */
    "DYLD_", /* macOS loader */
    NULL,
};

static int has_prefix(const char *name, const char *const *prefixes)
{
    for (size_t i = 0; prefixes[i]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

int policy_env_is_stripped(const char *name)
{
    for (size_t i = 0; policy_env_strip[i]; i++)
        if (strcmp(name, policy_env_strip[i]) == 0)
            return 1;
    return has_prefix(name, policy_env_strip_prefixes);
}

int policy_env_is_forbidden(const char *name)
{
    return has_prefix(name, policy_env_forbidden_prefixes);
}
