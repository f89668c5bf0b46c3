/* Unit: the host <-> ccsb-init control protocol codecs. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/init_proto.h"

START_TEST(exec_data_roundtrip)
{
    char *argv[] = {"sh", "-c", "echo 'a b'", "", NULL};
    char *envp[] = {"A=1", "EMPTY=", NULL};
    int fd = init_exec_data_pack("/work dir", argv, envp);
    ck_assert_int_ge(fd, 0);
    /* sealed: the receiver reads what the sender checked */
    ck_assert_int_lt(write(fd, "x", 1), 0);
    struct init_exec_data d;
    ck_assert_int_eq(init_exec_data_unpack(fd, &d), 0);
    ck_assert_str_eq(d.cwd, "/work dir");
    for (int i = 0; argv[i]; i++)
        ck_assert_str_eq(d.argv[i], argv[i]);
    ck_assert_ptr_null(d.argv[4]);
    ck_assert_str_eq(d.envp[0], "A=1");
    ck_assert_str_eq(d.envp[1], "EMPTY=");
    ck_assert_ptr_null(d.envp[2]);
    init_exec_data_free(&d);
    close(fd);
}
END_TEST

START_TEST(exec_data_rejects_bad_input)
{
    char *noargs[] = {NULL};
    ck_assert_int_eq(init_exec_data_pack("/", noargs, NULL), -EINVAL);

    struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        {"\x01\x00\x00\x00\x00\x00\x00\x00/\0sh", 12},          /* argv string not terminated */
        {"\x00\x00\x00\x00\x00\x00\x00\x00/\0", 10},            /* argc 0 */
        {"\x01\x00\x00\x00\x05\x00\x00\x00/\0sh\0", 13},        /* envc claims more than there is */
        {"\x01\x00\x00\x00\x00\x00\x00\x00/\0sh\0extra", 18},   /* trailing bytes */
        {"\xff\xff\xff\xff\x00\x00\x00\x00/\0sh\0", 13},        /* absurd count */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int fd = memfd_create("t", MFD_CLOEXEC);
        ck_assert_int_eq(write(fd, bad[i].bytes, bad[i].len), (ssize_t)bad[i].len);
        struct init_exec_data d;
        ck_assert_msg(init_exec_data_unpack(fd, &d) == -EPROTO, "case %zu accepted", i);
        close(fd);
    }
    /* not a regular file */
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    struct init_exec_data d;
    ck_assert_int_eq(init_exec_data_unpack(p[0], &d), -EPROTO);
    close(p[0]);
    close(p[1]);
}
END_TEST

START_TEST(messages_carry_fds)
{
    int sp[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
    int pp[2];
    ck_assert_int_eq(pipe(pp), 0);
    struct init_msg m, got;
    init_msg_init(&m, INIT_MSG_STARTED, 42);
    m.a = 7;
    init_msg_text(&m, "hello");
    ck_assert_int_eq(init_send(sp[0], &m, &pp[1], 1), 0);
    int fds[INIT_MAX_FDS];
    size_t n = INIT_MAX_FDS;
    ck_assert_int_eq(init_recv(sp[1], &got, fds, &n), 1);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(got.type, INIT_MSG_STARTED);
    ck_assert_uint_eq(got.id, 42);
    ck_assert_int_eq(got.a, 7);
    ck_assert_str_eq(got.text, "hello");
    ck_assert_int_eq(fcntl(fds[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    ck_assert_int_eq(write(fds[0], "z", 1), 1); /* it is the pipe's write end */
    char c;
    ck_assert_int_eq(read(pp[0], &c, 1), 1);
    close(fds[0]);

    /* more fds than the receiver can take: refused, and none leak */
    int three[3] = {pp[0], pp[1], pp[0]};
    ck_assert_int_eq(init_send(sp[0], &m, three, 3), 0);
    n = 2;
    ck_assert_int_eq(init_recv(sp[1], &got, fds, &n), -EPROTO);
    ck_assert_uint_eq(n, 0);

    /* a short datagram is a protocol error, not a message */
    ck_assert_int_eq(send(sp[0], "abc", 3, 0), 3);
    n = INIT_MAX_FDS;
    ck_assert_int_eq(init_recv(sp[1], &got, fds, &n), -EPROTO);

    /* long text is cut, and always terminated */
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    init_msg_text(&m, big);
    ck_assert_uint_eq(strlen(m.text), INIT_TEXT_MAX - 1);

    close(sp[0]);
    n = INIT_MAX_FDS;
    ck_assert_int_eq(init_recv(sp[1], &got, fds, &n), 0); /* EOF */
    close(sp[1]);
    close(pp[0]);
    close(pp[1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("init_proto");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, exec_data_roundtrip);
    tcase_add_test(tc, exec_data_rejects_bad_input);
    tcase_add_test(tc, messages_carry_fds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
