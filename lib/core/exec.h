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
/*
 * The two halves of exec_start, for a command sent ahead (the first one of
 * ccsb_launch_exec goes out with the launch):
 *  - exec_prepare (any thread that owns s): the exec with its host stdio and
 *    id, not linked to the session yet; child[] gets the sandbox ends.
 *  - exec_begin (loop thread): links it and has the backend start it (sent
 *    == 0: ops->exec) or finish what was sent (sent == 1: ops->exec_finish),
 *    then watches its output. Closes child[]; on failure releases the exec.
 * exec_discard undoes exec_prepare (x may be NULL).
 */
int exec_prepare(struct ccsb_session *s, const struct ccsb_exec_req *req, struct exec **x,
                 int child[3], char *err, size_t errlen);
int exec_begin(struct exec *x, const struct ccsb_exec_req *req, int child[3], int sent,
               char *err, size_t errlen);
void exec_discard(struct exec *x, int child[3]);
/* Unlinks and frees an exec, closing whatever is still open. */
void exec_release(struct exec *x);
/* Returns bytes written, CCSB_E_AGAIN when the pipe is full. */
int exec_write_stdin(struct exec *x, const void *buf, size_t len);
int exec_close_stdin(struct exec *x);
/* Restarts the output readers that backpressure paused (ctx.h). */
void exec_resume_output(struct ccsb_session *s);

#endif
