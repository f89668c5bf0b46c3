/*
 * The process groups a session started, shared by the backends that fork
 * commands on the host (none, seatbelt), so that stop, suspend and resume
 * also reach the background processes of execs that already ended.
 *
 * A group is forgotten as soon as it is seen empty: its number is then free
 * for the system to reuse (pids wrap; pid_max is often 32768), and
 * signalling it later could stop or kill an unrelated process group.
 */
#ifndef CCSB_BACKEND_PGROUPS_H
#define CCSB_BACKEND_PGROUPS_H

#include <stddef.h>
#include <sys/types.h>

struct pgroups {
    pid_t *v; /* 0: a free or reserved slot */
    size_t n, cap;
};

/* Forgets empty groups, then reserves a slot before fork (so that fork
 * never has to be undone for lack of memory). Returns the slot or -1. */
long pgroups_reserve(struct pgroups *g);
void pgroups_set(struct pgroups *g, long slot, pid_t pg);
/* Forgets pg if no process is left in it. */
void pgroups_forget_if_empty(struct pgroups *g, pid_t pg);
/* Signals every remembered group; a group found gone is forgotten. */
void pgroups_signal(struct pgroups *g, int sig);
void pgroups_clear(struct pgroups *g);

#endif
