#include "util/fd.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int fd_above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
}

int fd_hold_stdio(int held[3])
{
    int n = 0;
    while (n < 3) {
        int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd < 0)
            break;
        if (fd > 2) {
            close(fd);
            break;
        }
        held[n++] = fd;
    }
    return n;
}

void fd_release_stdio(const int held[3], int n)
{
    for (int i = 0; i < n; i++)
        close(held[i]);
}
