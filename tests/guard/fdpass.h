/* One fd over a unix socket (SCM_RIGHTS), for the guard's test programs:
 * the child hands its seccomp listener to the parent's supervisor. */
#ifndef CCSB_TESTS_GUARD_FDPASS_H
#define CCSB_TESTS_GUARD_FDPASS_H

/* 0 or -1. */
int fdpass_send(int sock, int fd);
/* The fd (close-on-exec), or -1 on error or after timeout_ms (-1: wait). */
int fdpass_recv(int sock, int timeout_ms);

#endif
