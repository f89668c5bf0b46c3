/*
 * The built-in policy lists. Keep every list here, one entry a line, with a
 * word on why; docs/policy-lists.md mirrors them for users.
 */
#include "policy/lists.h"

#include <string.h>

const char *const policy_env_strip[] = {
    /* dynamic linker injection */
    "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "LD_DEBUG", "LD_DEBUG_OUTPUT",
    "LD_PROFILE", "LD_ORIGIN_PATH", "LD_DYNAMIC_WEAK", "LD_BIND_NOW",
    "LD_USE_LOAD_BIAS", "LD_SHOW_AUXV", "LD_HWCAP_MASK", "GCONV_PATH",
    "MALLOC_CHECK_", "MALLOC_TRACE", "GLIBC_TUNABLES", "HOSTALIASES",
    "LOCALDOMAIN", "RES_OPTIONS", "NLSPATH",
    /* shells */
    "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4",
    "IFS", "CDPATH", "GLOBIGNORE", "ZDOTDIR",
    /* interpreters */
    "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE",
    "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONINSPECT",
    "PYTHONUSERBASE", "PYTHONBREAKPOINT", "PYTHONWARNINGS",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "PERL_MB_OPT", "PERL_MM_OPT",
    "RUBYOPT", "RUBYLIB", "GEM_PATH",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
    "LUA_INIT", "LUA_PATH", "LUA_CPATH", "TCLLIBPATH", "PHPRC", "PHP_INI_SCAN_DIR",
    /* git runs programs named by these */
    "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS",
    "GIT_EDITOR", "GIT_PAGER", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF",
    "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_TEMPLATE_DIR",
    /* credentials and agent sockets the sandbox must not inherit */
    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS",
    NULL,
};

const char *const policy_env_strip_prefixes[] = {
    "DYLD_",        /* macOS dynamic linker */
    "LD_",          /* any other glibc loader knob */
    "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", /* per-key git config injection */
    "BASH_FUNC_",   /* exported shell functions (shellshock-style) */
    NULL,
};

int policy_env_is_stripped(const char *name)
{
    for (size_t i = 0; policy_env_strip[i]; i++)
        if (strcmp(name, policy_env_strip[i]) == 0)
            return 1;
    for (size_t i = 0; policy_env_strip_prefixes[i]; i++)
        if (strncmp(name, policy_env_strip_prefixes[i], strlen(policy_env_strip_prefixes[i])) == 0)
            return 1;
    return 0;
}

const char *const policy_env_forbidden_prefixes[] = {
    "LD_",   /* glibc/musl loader */
    "DYLD_", /* macOS loader */
    NULL,
};

int policy_env_is_forbidden(const char *name)
{
    for (size_t i = 0; policy_env_forbidden_prefixes[i]; i++)
        if (strncmp(name, policy_env_forbidden_prefixes[i],
                    strlen(policy_env_forbidden_prefixes[i])) == 0)
            return 1;
    return 0;
}
