/*
 * The control protocol between the library (host side of a bubblewrap
 * session) and ccsb-init (PID 1 inside the sandbox). Shared by both; built
 * into the library and into the helper.
 *
 * Transport: one AF_UNIX SOCK_SEQPACKET socketpair per session, so every
 * message keeps its boundary and carries its own fds (SCM_RIGHTS). Every
 * message is one fixed-size struct init_msg; variable-length exec data
 * (argv, env, cwd) travels in a sealed memfd passed alongside, so there is
 * no size limit short of ARG_MAX and no framing code on either side.
 *
 * The host end going away (EOF) means "stop": ccsb-init kills everything in
 * the sandbox and exits.
 */
#ifndef CCSB_BACKEND_INIT_PROTO_H
#define CCSB_BACKEND_INIT_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define INIT_PROTO_VERSION 3

/* The fd number of the control socket inside ccsb-init. */
#define INIT_CTRL_FD 3

/* Where the helper is bound inside every sandbox (read-only). */
#define INIT_GUEST_DIR "/run/ccsb"
#define INIT_GUEST_PATH "/run/ccsb/ccsb-init"
/* Where bwrap binds the host's /dev for ccsb-init to make /dev from (and
 * then take away): see helper/init_dev.c. */
#define INIT_GUEST_HOSTDEV "/run/ccsb/hostdev"

/* Most fds one message carries. */
#define INIT_MAX_FDS 7

enum init_msg_type {
    /* ccsb-init -> host */
    INIT_MSG_READY = 1,   /* a = proto version, b = http port, c = socks port;
                             fds: [http listener, socks listener];
                             text: limits that applied ("rlimit", ...) */
    INIT_MSG_STARTED = 2, /* id; a = pid in the sandbox; fds: [pty master] with a pty */
    INIT_MSG_FAILED = 3,  /* id; a = errno; text: what failed (exec not started) */
    INIT_MSG_EXITED = 4,  /* id; a = exit code or -1, b = signal */
    INIT_MSG_REPLY = 5,   /* reply to SUSPEND/RESUME: id; a = 0 or errno */
    INIT_MSG_FATAL = 6,   /* ccsb-init cannot go on: text says why; it exits next */
    INIT_MSG_GUARD = 7,   /* id = exec id; fds: [seccomp listener]. Sent by the exec's
                             own child after it loaded the guard filter, before exec */
    INIT_MSG_DETACHED = 8,/* a mount ccsb-init made for the policy no longer covers its
                             path (the host renamed a file over it or removed it, and
                             the kernel detached every mount on the old node): a = what
                             it was (INIT_PROT_*), b = 1 when the sandbox was ended for
                             it (every process killed first; ccsb-init exits next),
                             0 when it goes on (a file's deny-write bind, the seccomp
                             guard still refusing writes by name), c = errno of looking
                             the path up now (0: another node is there);
                             text = the path as the sandbox sees it */

    /* host -> ccsb-init */
    INIT_MSG_EXEC = 16,   /* id; flags INIT_EXEC_*; a = rows, b = cols;
                             fds: [data memfd, stdin, stdout, stderr] or
                                  [data memfd] with INIT_EXEC_PTY, then [gate] with
                                  INIT_EXEC_GATE, each optionally followed by a
                                  spare channel (see INIT_MSG_SPARE) */
    INIT_MSG_KILL = 17,   /* id; a = signal; the exec's process group (no reply) */
    INIT_MSG_SUSPEND = 19,/* stop every process in the sandbox */
    INIT_MSG_RESUME = 20, /* continue them */
    INIT_MSG_STOP = 21,   /* kill every process and exit */
    INIT_MSG_GO = 22,     /* the host made the placeholder mount points: mount
                             (only sent when ccsb-init runs with --await-go) */
    INIT_MSG_SETUP = 25,  /* fds: [sealed memfd of NUL-terminated option words for
                             `ccsb-init init`] (no reply). To a ccsb-init started with
                             `init --setup`, first thing: bwrap is started before the
                             policy is built, so the plan's part of ccsb-init's options
                             cannot be on its command line */
    INIT_MSG_SPARE = 24,  /* fds: [both ends of a fresh AF_UNIX SOCK_SEQPACKET pair]
                             (no reply). ccsb-init forks the next exec's process ahead
                             of its request and hands it the request over this pair;
                             the host makes it so that it lives in the host's network
                             namespace, invisible in the sandbox's /proc/net/unix */
    INIT_MSG_GUARD_FILTER = 23, /* id; a = seccomp(2) filter flags; fds: [memfd holding
                                   the BPF program (struct sock_filter[])]. Only before
                                   READY, to a ccsb-init started with --await-guard;
                                   READY is the answer (a refusal: FATAL). Every exec
                                   loads it just before exec */
};

/* Largest SETUP ccsb-init accepts. */
#define INIT_SETUP_MAX (1u << 20)

/* Largest guard program ccsb-init accepts (BPF_MAXINSNS instructions). */
#define INIT_GUARD_MAX_INSNS 4096

#define INIT_EXEC_PTY 0x1u
#define INIT_EXEC_END 0x2u /* the sandbox ends when this exec's main process does */
/* The command waits before exec for one byte on the gate fd, the host's go;
 * EOF there and it exits instead (a command sent ahead of the host's attach
 * never runs for a launch that failed). */
#define INIT_EXEC_GATE 0x4u

/* What a detached mount protected (INIT_MSG_DETACHED's a). */
#define INIT_PROT_MASK_FILE 1 /* --mask-file: a deny-read file */
#define INIT_PROT_MASK_DIR 2  /* --mask-dir: a deny-read directory */
#define INIT_PROT_PIN_DIR 3   /* --pin / --ro over a directory */
#define INIT_PROT_PIN_FILE 4  /* --ro over a file */

#define INIT_TEXT_MAX 240

struct init_msg {
    uint32_t type;
    uint32_t flags;
    uint64_t id;
    int32_t a, b, c;
    uint32_t pad;
    char text[INIT_TEXT_MAX]; /* NUL-terminated */
};

/*
 * Exec data (the memfd): a header of two uint32 (argc, envc), then the cwd,
 * the argv strings and the "NAME=VALUE" strings, each NUL-terminated.
 */
struct init_exec_data {
    char *buf; /* owns every string below */
    char *cwd;
    char **argv; /* NULL-terminated */
    char **envp; /* NULL-terminated */
};

/* Largest exec data we accept (a bit over the kernel's ARG_MAX default). */
#define INIT_EXEC_DATA_MAX (4u << 20)

/*
 * Sends one message with up to INIT_MAX_FDS fds. Returns 0 or -errno.
 * Retries on EINTR; the socket may be non-blocking (then -EAGAIN).
 */
int init_send(int sock, const struct init_msg *m, const int *fds, size_t nfds);

/*
 * Receives one message. *nfds is in: capacity of fds, out: number received
 * (all CLOEXEC). Returns 1 on a message, 0 on EOF, or -errno. A truncated
 * message or extra fds beyond capacity is -EPROTO (received fds closed).
 */
int init_recv(int sock, struct init_msg *m, int *fds, size_t *nfds);

/* Fills m with zeros and the type, id. */
void init_msg_init(struct init_msg *m, uint32_t type, uint64_t id);
/* Copies text into m->text, truncating safely. */
void init_msg_text(struct init_msg *m, const char *text);

/*
 * Packs argv/env/cwd into a new sealed memfd (returned, CLOEXEC). Returns
 * the fd or -errno.
 */
int init_exec_data_pack(const char *cwd, char *const *argv, char *const *envp);
/* Reads and checks exec data from fd. Returns 0 or -errno (-EPROTO: malformed). */
int init_exec_data_unpack(int fd, struct init_exec_data *out);
void init_exec_data_free(struct init_exec_data *d);

#endif
