#include "backend/pgroups.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

static int gone(pid_t pg)
{
    return kill(-pg, 0) < 0 && errno == ESRCH;
}

static void forget_empty(struct pgroups *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->v[i] > 0 && !gone(g->v[i]))
            g->v[n++] = g->v[i];
    g->n = n;
}

long pgroups_reserve(struct pgroups *g)
{
    forget_empty(g);
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        pid_t *v = realloc(g->v, cap * sizeof *v);
        if (!v)
            return -1;
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n] = 0;
    return (long)g->n++;
}

void pgroups_set(struct pgroups *g, long slot, pid_t pg)
{
    if (slot >= 0 && (size_t)slot < g->n)
        g->v[slot] = pg;
}

void pgroups_forget_if_empty(struct pgroups *g, pid_t pg)
{
    if (pg <= 0 || !gone(pg))
        return;
    for (size_t i = 0; i < g->n; i++)
        if (g->v[i] == pg)
            g->v[i] = 0;
}

void pgroups_signal(struct pgroups *g, int sig)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->v[i] > 0 && kill(-g->v[i], sig) < 0 && errno == ESRCH)
            g->v[i] = 0;
}

void pgroups_clear(struct pgroups *g)
{
    free(g->v);
    g->v = NULL;
    g->n = g->cap = 0;
}
