/* The `none` backend's session tmp removal (none_tmp.c). */
#ifndef CCSB_BACKEND_NONE_TMP_H
#define CCSB_BACKEND_NONE_TMP_H

/* Removes dir and everything under it that is on the same mount, without
 * following symlinks. 0 when dir is gone, else -1 (errno set). */
int none_tmp_remove(const char *dir);

#endif
