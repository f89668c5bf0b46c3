/* The closed sets of backend and mode names, parsed strictly. */
#include "spec/spec.h"

#include <string.h>

#include "ccsandbox/ccsandbox.h"

static const char *const backend_names[] = {
    [CCSB_BACKEND_AUTO] = "auto",
    [CCSB_BACKEND_NATIVE] = "native",
    [CCSB_BACKEND_NONE] = "none",
    [CCSB_BACKEND_MICROVM] = "microvm",
};

static const char *const mode_names[] = {
    [CCSB_MODE_CHAT] = "chat",
    [CCSB_MODE_REVIEW] = "review",
    [CCSB_MODE_PLAN] = "plan",
    [CCSB_MODE_ORCHESTRATE] = "orchestrate",
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

int spec_backend_parse(const char *name)
{
    if (!name)
        return -1;
    for (size_t i = 0; i < N_OF(backend_names); i++)
        if (strcmp(name, backend_names[i]) == 0)
            return (int)i;
    /* The reference design stored "docker" for what is now the native
     * backend; specs written for it keep working. */
    if (strcmp(name, "docker") == 0)
        return CCSB_BACKEND_NATIVE;
    return -1;
}

int spec_mode_parse(const char *name)
{
    if (!name)
        return -1;
    for (size_t i = 0; i < N_OF(mode_names); i++)
        if (strcmp(name, mode_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *spec_backend_name(int backend)
{
    if (backend < 0 || (size_t)backend >= N_OF(backend_names))
        return NULL;
    return backend_names[backend];
}

const char *spec_mode_name(int mode)
{
    if (mode < 0 || (size_t)mode >= N_OF(mode_names))
        return NULL;
    return mode_names[mode];
}
