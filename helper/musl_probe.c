/* Configure-time probe (helper/meson.build): can musl-gcc build ccsb-init?
 * The calls and headers it needs beyond ISO C, linked statically. */
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "linux_api.h"

int main(void)
{
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
    (void)a;
    return SYS_openat2 > 0 && SYS_close_range > 0 && SYS_fsmount > 0 ? 0 : 1;
}
