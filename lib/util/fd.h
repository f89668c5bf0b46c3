/* Descriptors the library keeps open in the host process. */
#ifndef CCSB_UTIL_FD_H
#define CCSB_UTIL_FD_H

/*
 * Moves fd to a number of 3 or more (close-on-exec) when it is 0, 1 or 2,
 * which a host that closed its standard streams hands out next: there its
 * own read(0) or perror() would reach the library's pipes and eventfds.
 * Returns the fd to use; on failure closes fd and returns -1 (errno set).
 * Takes -1 through unchanged.
 */
int fd_above_stdio(int fd);

/*
 * For descriptors made where we cannot move them afterwards (libevent's
 * epoll fd): fills whichever of 0, 1, 2 are closed with /dev/null and
 * returns how many (their numbers in held[]); fd_release_stdio closes them.
 */
int fd_hold_stdio(int held[3]);
void fd_release_stdio(const int held[3], int n);

#endif
