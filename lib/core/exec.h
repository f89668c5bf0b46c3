/* Exec bookkeeping shared by every backend (loop thread only). */
#ifndef CCSB_CORE_EXEC_H
#define CCSB_CORE_EXEC_H

#include <stddef.h>
#include <stdint.h>

struct ccsb_session;
struct ccsb_exec_req;
struct exec;

/* Creates the host stdio, asks the backend to start the command, registers
 * the output readers and the timer. */
int exec_start(struct ccsb_session *s, const struct ccsb_exec_req *req, uint64_t *out_id,
               char *err, size_t errlen);
/* Unlinks and frees an exec, closing whatever is still open. */
void exec_release(struct exec *x);
/* Returns bytes written, CCSB_E_AGAIN when the pipe is full. */
int exec_write_stdin(struct exec *x, const void *buf, size_t len);
int exec_close_stdin(struct exec *x);
/* Restarts the output readers that backpressure paused (ctx.h). */
void exec_resume_output(struct ccsb_session *s);

#endif
