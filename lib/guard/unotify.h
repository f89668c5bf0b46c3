/* Thin wrappers over the seccomp user-notification ioctls and pidfds. */
#ifndef CCSB_GUARD_UNOTIFY_H
#define CCSB_GUARD_UNOTIFY_H

#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Sizes the running kernel uses (it may be newer than our headers). */
int unotify_sizes(struct seccomp_notif_sizes *out);

/* buf must hold max(sizes.seccomp_notif, sizeof(struct seccomp_notif)).
 * 0 or -errno (-ENOENT: the target went away between poll and receive). */
int unotify_recv(int listener, void *buf, size_t bufsize);
/* 0 while the notification is still pending, else -errno. */
int unotify_id_valid(int listener, uint64_t id);
/* Answers with a value (error == 0) or a failure (-error returned to it). */
int unotify_respond(int listener, uint64_t id, int64_t val, int error);
/* Installs srcfd in the target and answers the call with the new fd number,
 * atomically. Returns the target's fd number or -errno. */
int unotify_addfd_send(int listener, uint64_t id, int srcfd, unsigned newfd_flags);

int pidfd_open_tid(pid_t tid);
/* A duplicate of the target's fd (close-on-exec) or -errno. */
int pidfd_dup(int pidfd, int targetfd);

#endif
