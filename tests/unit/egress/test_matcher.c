/* Matcher, entry parser, IDN and address checks: vectors in both directions. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "egress/idna.h"
#include "egress/rule.h"
#include "egress/rules.h"
#include "spec/spec.h"

/* Judges host against an allowlist (and optional denylist); returns allowed. */
static int judge(const char *const *allow, size_t na, const char *const *deny, size_t nd,
                 const char *host, char *reason, size_t rlen)
{
    struct egress_rules *r = NULL;
    char err[256];
    ck_assert_msg(egress_rules_new(1, allow, na, deny, nd, &r, err, sizeof err) == 0, "%s", err);
    struct egress_target t;
    char why[256];
    ck_assert_msg(egress_target_parse(host, &t, why, sizeof why) == 0, "%s: %s", host, why);
    struct egress_verdict v;
    int ok = egress_rules_judge(r, &t, &v);
    if (reason)
        snprintf(reason, rlen, "%s", v.reason);
    egress_rules_free(r);
    return ok;
}

static int allow1(const char *entry, const char *host)
{
    const char *a[] = {entry};
    return judge(a, 1, NULL, 0, host, NULL, 0);
}

START_TEST(test_exact)
{
    ck_assert_int_eq(allow1("api.example.com", "api.example.com"), 1);
    ck_assert_int_eq(allow1("api.example.com", "API.Example.COM"), 1);
    ck_assert_int_eq(allow1("api.example.com", "api.example.com."), 1);
    ck_assert_int_eq(allow1("API.EXAMPLE.COM.", "api.example.com"), 1);
    ck_assert_int_eq(allow1("api.example.com", "example.com"), 0);
    ck_assert_int_eq(allow1("api.example.com", "x.api.example.com"), 0);
    ck_assert_int_eq(allow1("api.example.com", "api.example.com.evil.net"), 0);
    ck_assert_int_eq(allow1("api.example.com", "apiexample.com"), 0);
    ck_assert_int_eq(allow1("localhost", "localhost:8080"), 1);
}
END_TEST

START_TEST(test_leading_wildcard)
{
    ck_assert_int_eq(allow1("*.example.com", "a.example.com"), 1);
    ck_assert_int_eq(allow1("*.example.com", "a.b.example.com"), 1);
    ck_assert_int_eq(allow1("*.example.com", "x.y.z.example.com"), 1);
    ck_assert_int_eq(allow1("*.example.com", "example.com"), 0);
    ck_assert_int_eq(allow1("*.example.com", "badexample.com"), 0);
    ck_assert_int_eq(allow1("*.example.com", "a.example.com.evil.net"), 0);
    ck_assert_int_eq(allow1("*.example.com", "example.org"), 0);
    ck_assert_int_eq(allow1("*.Example.Com", "A.EXAMPLE.com"), 1);
}
END_TEST

START_TEST(test_middle_wildcard)
{
    const char *e = "bedrock.*.amazonaws.com";
    ck_assert_int_eq(allow1(e, "bedrock.us-east-1.amazonaws.com"), 1);
    ck_assert_int_eq(allow1(e, "bedrock.evil.attacker.amazonaws.com"), 0);
    ck_assert_int_eq(allow1(e, "bedrock.amazonaws.com"), 0);
    ck_assert_int_eq(allow1(e, "x.bedrock.us-east-1.amazonaws.com"), 0);
    ck_assert_int_eq(allow1(e, "bedrock.us-east-1.amazonaws.com.evil.net"), 0);
    ck_assert_int_eq(allow1("a.b.*.c.d", "a.b.x.c.d"), 1);
    ck_assert_int_eq(allow1("a.b.*.c.d", "a.x.x.c.d"), 0);
    ck_assert_int_eq(allow1("a.b.*.c.d", "b.x.c.d"), 0);
}
END_TEST

START_TEST(test_ports)
{
    ck_assert_int_eq(allow1("example.com:443", "example.com:443"), 1);
    ck_assert_int_eq(allow1("example.com:443", "example.com:80"), 0);
    ck_assert_int_eq(allow1("example.com:443", "example.com"), 0);
    ck_assert_int_eq(allow1("example.com", "example.com:22"), 1);
    ck_assert_int_eq(allow1("*.example.com:8443", "a.example.com:8443"), 1);
    ck_assert_int_eq(allow1("*.example.com:8443", "a.example.com:443"), 0);
    ck_assert_int_eq(allow1("[2001:db8::1]:8443", "[2001:db8::1]:8443"), 1);
    ck_assert_int_eq(allow1("[2001:db8::1]:8443", "[2001:db8::1]:443"), 0);
    ck_assert_int_eq(allow1("10.0.0.1:5432", "10.0.0.1:5432"), 1);
    ck_assert_int_eq(allow1("10.0.0.1:5432", "10.0.0.1:5433"), 0);
    /* A port-restricted denial does not spill onto other ports. */
    const char *a[] = {"example.com"};
    const char *d[] = {"example.com:25"};
    ck_assert_int_eq(judge(a, 1, d, 1, "example.com:25", NULL, 0), 0);
    ck_assert_int_eq(judge(a, 1, d, 1, "example.com:443", NULL, 0), 1);
}
END_TEST

START_TEST(test_ip)
{
    ck_assert_int_eq(allow1("10.1.2.3", "10.1.2.3"), 1);
    ck_assert_int_eq(allow1("10.1.2.3", "10.1.2.4"), 0);
    ck_assert_int_eq(allow1("[::1]", "[::1]:80"), 1);
    ck_assert_int_eq(allow1("[::1]", "::1"), 1);
    ck_assert_int_eq(allow1("[2001:DB8:0:0::1]", "[2001:db8::1]"), 1);
    ck_assert_int_eq(allow1("[2001:db8::1]", "[2001:db8::2]"), 0);
    /* IPv4-mapped IPv6 is judged as the IPv4 it carries, both ways. */
    ck_assert_int_eq(allow1("10.1.2.3", "[::ffff:10.1.2.3]"), 1);
    ck_assert_int_eq(allow1("[::ffff:10.1.2.3]", "10.1.2.3:443"), 1);
    ck_assert_int_eq(allow1("[::ffff:a01:203]", "10.1.2.3"), 1);
    /* Numeric spellings the C library accepts are the address they denote. */
    ck_assert_int_eq(allow1("127.0.0.1", "2130706433"), 1);
    ck_assert_int_eq(allow1("127.0.0.1", "0x7f.1"), 1);
    /* A name entry never matches an address and vice versa. */
    ck_assert_int_eq(allow1("*.example.com", "10.1.2.3"), 0);
}
END_TEST

START_TEST(test_deny_wins)
{
    char reason[400];
    const char *a[] = {"*.example.com", "169.254.169.254"};
    const char *d[] = {"secret.example.com"};
    ck_assert_int_eq(judge(a, 2, d, 1, "secret.example.com", reason, sizeof reason), 0);
    ck_assert_str_eq(reason, "denied by egressDenylist entry secret.example.com");
    ck_assert_int_eq(judge(a, 2, d, 1, "other.example.com", reason, sizeof reason), 1);
    ck_assert_str_eq(reason, "allowed by egressAllowlist entry *.example.com");
    ck_assert_int_eq(judge(a, 2, d, 1, "169.254.169.254", reason, sizeof reason), 0);
    ck_assert_str_eq(reason, "denied by baseline denylist entry 169.254.169.254");
    ck_assert_int_eq(judge(a, 2, d, 1, "[::ffff:169.254.169.254]:80", reason, sizeof reason), 0);
    ck_assert_str_eq(reason, "denied by baseline denylist entry 169.254.169.254");
    ck_assert_int_eq(judge(a, 2, d, 1, "0xa9fea9fe", reason, sizeof reason), 0);
    ck_assert_int_eq(judge(a, 2, d, 1, "metadata.google.internal.", reason, sizeof reason), 0);
    ck_assert_str_eq(reason, "denied by baseline denylist entry metadata.google.internal");
    ck_assert_int_eq(judge(a, 2, d, 1, "nothing.test", reason, sizeof reason), 0);
    ck_assert_str_eq(reason, "no allowlist entry matches");
    ck_assert_int_eq(judge(a, 2, d, 1, "api.anthropic.com", reason, sizeof reason), 1);
    ck_assert_str_eq(reason, "allowed by baseline allowlist entry api.anthropic.com");
    ck_assert_int_eq(judge(a, 2, d, 1, "codeload.github.com:443", reason, sizeof reason), 1);
    ck_assert_str_eq(reason, "allowed by GitHub list entry *.github.com");
}
END_TEST

START_TEST(test_most_specific_reported)
{
    char reason[400];
    const char *a[] = {"*.example.com", "*.b.example.com", "x.*.example.com", "y.b.example.com"};
    ck_assert_int_eq(judge(a, 4, NULL, 0, "y.b.example.com", reason, sizeof reason), 1);
    ck_assert_str_eq(reason, "allowed by egressAllowlist entry y.b.example.com");
    ck_assert_int_eq(judge(a, 4, NULL, 0, "x.b.example.com", reason, sizeof reason), 1);
    ck_assert_str_eq(reason, "allowed by egressAllowlist entry x.*.example.com");
    ck_assert_int_eq(judge(a, 4, NULL, 0, "z.b.example.com", reason, sizeof reason), 1);
    ck_assert_str_eq(reason, "allowed by egressAllowlist entry *.b.example.com");
    ck_assert_int_eq(judge(a, 4, NULL, 0, "z.c.example.com", reason, sizeof reason), 1);
    ck_assert_str_eq(reason, "allowed by egressAllowlist entry *.example.com");
}
END_TEST

static void bad(const char *entry, const char *fragment)
{
    char why[256] = "";
    ck_assert_msg(egress_rule_check(entry, why, sizeof why) == -1, "accepted: %s", entry);
    ck_assert_msg(strstr(why, fragment) != NULL, "%s: why=\"%s\" lacks \"%s\"", entry, why,
                  fragment);
}

START_TEST(test_invalid_entries)
{
    bad("*", "every host");
    bad("*.com", "top-level domain");
    bad("a.*.com", "top-level domain");
    bad("*example.com", "whole label");
    bad("a*.example.com", "whole label");
    bad("a.*.*.b", "more than one");
    bad("https://x", "URL");
    bad("x/y", "'/'");
    bad("10.0.0.0/8", "'/'");
    bad("2001:db8::1:443", "brackets");
    bad("2001:db8::1", "brackets");
    bad("a..b", "empty label");
    bad(".a.b", "empty label");
    bad("", "empty");
    bad("example.com:0", "port");
    bad("example.com:65536", "port");
    bad("example.com:", "port");
    bad("example.com:x", "port");
    bad("[::1]x", "port");
    bad("[::1", "closing");
    bad("[zz::1]", "IPv6");
    bad("[fe80::1%eth0]", "IPv6");
    bad("1.2.3", "IPv4");
    bad("1.2.3.256", "IPv4");
    bad("01.2.3.4", "IPv4");
    bad("example.*", "last label");
    bad("user@example.com", "'@'");
    bad("exa mple.com", "space");
    bad("exa$mple.com", "invalid character");
    bad("\xff.example.com", "UTF-8");
    bad("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "63");
    /* The entry is named in the message. */
    char why[256];
    ck_assert_int_eq(egress_rule_check("*.com", why, sizeof why), -1);
    ck_assert_ptr_nonnull(strstr(why, "\"*.com\""));
}
END_TEST

START_TEST(test_valid_entries)
{
    const char *ok[] = {"example.com", "*.example.com", "bedrock.*.amazonaws.com",
                        "a.b.*.c.d", "10.0.0.1", "10.0.0.1:80", "[::1]", "[::1]:443",
                        "[2001:db8::1]:8443", "localhost", "example.com.", "_acme.example.com",
                        "xn--bcher-kva.example", "bücher.example", "*.co.uk", "EXAMPLE.COM:443"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char why[256] = "";
        ck_assert_msg(egress_rule_check(ok[i], why, sizeof why) == 0, "%s: %s", ok[i], why);
    }
}
END_TEST

START_TEST(test_punycode)
{
    /* RFC 3492 section 7.1 sample (L) and well-known labels. */
    char out[64];
    const char *why = NULL;
    ck_assert_int_gt(idna_label_to_ascii("bücher", strlen("bücher"), out, sizeof out, &why), 0);
    ck_assert_str_eq(out, "xn--bcher-kva");
    ck_assert_int_gt(idna_label_to_ascii("München", strlen("München"), out, sizeof out, &why), 0);
    ck_assert_str_eq(out, "xn--mnchen-3ya");
    ck_assert_int_gt(idna_label_to_ascii("例え", strlen("例え"), out, sizeof out, &why), 0);
    ck_assert_str_eq(out, "xn--r8jz45g");
    ck_assert_int_gt(idna_label_to_ascii("テスト", strlen("テスト"), out, sizeof out, &why), 0);
    ck_assert_str_eq(out, "xn--zckzah");
    /* RFC 3492 7.1 (L): 3<nen>B<gumi><kinpachi><sensei> */
    const uint32_t l[] = {0x0033, 0x5E74, 0x0042, 0x7D44, 0x91D1, 0x516B, 0x5148, 0x751F};
    int w = punycode_encode(l, 8, out, sizeof out);
    ck_assert_int_gt(w, 0);
    out[w] = '\0';
    ck_assert_str_eq(out, "3B-ww4c5e180e575a65lsy2b");
    /* RFC 3492 7.1 (A): Arabic (Egyptian). */
    const uint32_t a[] = {0x0644, 0x064A, 0x0647, 0x0645, 0x0627, 0x0628, 0x062A, 0x0643,
                          0x0644, 0x0645, 0x0648, 0x0634, 0x0639, 0x0631, 0x0628, 0x064A,
                          0x061F};
    w = punycode_encode(a, 17, out, sizeof out);
    ck_assert_int_gt(w, 0);
    out[w] = '\0';
    ck_assert_str_eq(out, "egbpdaj6bu4bxfgehfvwxn");
    ck_assert_int_eq(punycode_encode(a, 17, out, 5), -1);
    /* An IDN entry matches its punycode spelling and vice versa. */
    ck_assert_int_eq(allow1("bücher.example", "xn--bcher-kva.example"), 1);
    ck_assert_int_eq(allow1("*.xn--bcher-kva.example", "www.bücher.example"), 1);
    ck_assert_int_eq(allow1("bücher.example", "bucher.example"), 0);
}
END_TEST

static int check_addr(const char *const *allow, size_t na, const char *host, const char *addr,
                      const struct egress_hostaddrs *own, char *reason, size_t rlen)
{
    struct egress_rules *r = NULL;
    char err[256];
    ck_assert_int_eq(egress_rules_new(1, allow, na, NULL, 0, &r, err, sizeof err), 0);
    struct egress_target t;
    ck_assert_int_eq(egress_target_parse(host, &t, err, sizeof err), 0);
    struct egress_verdict v;
    ck_assert_int_eq(egress_rules_judge(r, &t, &v), 1);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        ck_assert_int_eq(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        ck_assert_int_eq(inet_pton(AF_INET, addr, &s4->sin_addr), 1);
    }
    int ok = egress_rules_check_addr(r, &v, (struct sockaddr *)&ss, t.port, own, reason, rlen);
    egress_rules_free(r);
    return ok;
}

START_TEST(test_resolved_addresses)
{
    char reason[400];
    const char *wild[] = {"*.example.com"};
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "93.184.216.34", NULL, reason,
                                sizeof reason), 1);
    /* A wildcard-allowed name that resolves to metadata, loopback, ... is refused. */
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "169.254.169.254", NULL, reason,
                                sizeof reason), 0);
    ck_assert_ptr_nonnull(strstr(reason, "baseline denylist entry 169.254.169.254"));
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "::ffff:169.254.169.254", NULL,
                                reason, sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "64:ff9b::a9fe:a9fe", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "fd00:ec2::254", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "fd00:ec2::99", NULL, reason,
                                sizeof reason), 0);
    ck_assert_ptr_nonnull(strstr(reason, "metadata"));
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "100.100.100.200", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "127.0.0.1", NULL, reason,
                                sizeof reason), 0);
    ck_assert_ptr_nonnull(strstr(reason, "loopback"));
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "::1", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "0.0.0.0", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "169.254.1.1", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "fe80::1", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "224.0.0.1", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "::ffff:127.0.0.1", NULL, reason,
                                sizeof reason), 0);
    /* The host's own addresses. */
    uint8_t mine[1][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7}};
    struct egress_hostaddrs own = {mine, 1};
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "192.0.2.7", &own, reason,
                                sizeof reason), 0);
    ck_assert_ptr_nonnull(strstr(reason, "own addresses"));
    ck_assert_int_eq(check_addr(wild, 1, "a.example.com:80", "192.0.2.8", &own, reason,
                                sizeof reason), 1);
    /* ... unless the allowing entry names the address, or localhost for loopback. */
    const char *named[] = {"192.0.2.7", "127.0.0.1", "localhost", "[::1]"};
    ck_assert_int_eq(check_addr(named, 4, "192.0.2.7:80", "192.0.2.7", &own, reason,
                                sizeof reason), 1);
    ck_assert_int_eq(check_addr(named, 4, "127.0.0.1:80", "127.0.0.1", NULL, reason,
                                sizeof reason), 1);
    ck_assert_int_eq(check_addr(named, 4, "localhost:80", "127.0.0.1", NULL, reason,
                                sizeof reason), 1);
    ck_assert_int_eq(check_addr(named, 4, "localhost:80", "::1", NULL, reason,
                                sizeof reason), 1);
    ck_assert_int_eq(check_addr(named, 4, "localhost:80", "169.254.1.1", NULL, reason,
                                sizeof reason), 0);
    ck_assert_int_eq(check_addr(named, 4, "[::1]:80", "::1", NULL, reason, sizeof reason), 1);
    /* Naming a metadata address never helps: the denylist wins. */
    const char *meta[] = {"*.example.com", "169.254.169.254"};
    ck_assert_int_eq(check_addr(meta, 2, "a.example.com:80", "169.254.169.254", NULL, reason,
                                sizeof reason), 0);
}
END_TEST

START_TEST(test_network_disabled)
{
    struct egress_rules *r = NULL;
    char err[256];
    const char *a[] = {"example.com"};
    ck_assert_int_eq(egress_rules_new(0, a, 1, NULL, 0, &r, err, sizeof err), 0);
    struct egress_target t;
    ck_assert_int_eq(egress_target_parse("example.com", &t, err, sizeof err), 0);
    struct egress_verdict v;
    ck_assert_int_eq(egress_rules_judge(r, &t, &v), 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "networkEnabled is false"));
    ck_assert_int_eq(egress_target_parse("api.anthropic.com", &t, err, sizeof err), 0);
    ck_assert_int_eq(egress_rules_judge(r, &t, &v), 0);
    egress_rules_free(r);
    /* Bad entries are still reported when the network is off. */
    const char *b[] = {"ok.example.com", "*.com"};
    ck_assert_int_eq(egress_rules_new(0, b, 2, NULL, 0, &r, err, sizeof err), CCSB_E_SPEC);
    ck_assert_ptr_nonnull(strstr(err, "egressAllowlist[1]: \"*.com\""));
}
END_TEST

START_TEST(test_check_host_api)
{
    struct ccsb_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.network_enabled = 1;
    ck_assert_int_eq(strv_push(&spec.egress_allow, "*.example.com"), 0);
    int allowed = -1;
    char *reason = NULL;
    ck_assert_int_eq(ccsb_spec_check_host(&spec, "example.com", &allowed, &reason), 0);
    ck_assert_int_eq(allowed, 0);
    ck_assert_str_eq(reason, "no allowlist entry matches");
    free(reason);
    ck_assert_int_eq(ccsb_spec_check_host(&spec, "a.b.example.com", &allowed, &reason), 0);
    ck_assert_int_eq(allowed, 1);
    ck_assert_str_eq(reason, "allowed by egressAllowlist entry *.example.com");
    free(reason);
    ck_assert_int_eq(ccsb_spec_check_host(&spec, "169.254.169.254", &allowed, &reason), 0);
    ck_assert_int_eq(allowed, 0);
    ck_assert_str_eq(reason, "denied by baseline denylist entry 169.254.169.254");
    free(reason);
    ck_assert_int_eq(ccsb_spec_check_host(&spec, "a b", &allowed, &reason), CCSB_E_INVAL);
    ck_assert_ptr_nonnull(reason);
    free(reason);
    ck_assert_int_eq(ccsb_spec_check_host(&spec, "a.example.com", &allowed, NULL), 0);
    ck_assert_int_eq(ccsb_spec_check_host(NULL, "x", &allowed, NULL), CCSB_E_INVAL);
    ck_assert_int_eq(strv_push(&spec.egress_allow, "*"), 0);
    ck_assert_int_eq(ccsb_spec_check_host(&spec, "a.example.com", &allowed, &reason),
                     CCSB_E_SPEC);
    ck_assert_ptr_nonnull(strstr(reason, "egressAllowlist[1]"));
    free(reason);
    strv_clear(&spec.egress_allow);
}
END_TEST

START_TEST(test_builtin_lists_parse)
{
    /* Every built-in entry parses (egress_rules_new fails otherwise). */
    struct egress_rules *r = NULL;
    char err[256];
    ck_assert_msg(egress_rules_new(1, NULL, 0, NULL, 0, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_gt(egress_matcher_count(r->allow), 50);
    ck_assert_uint_gt(egress_matcher_count(r->deny), 10);
    egress_rules_free(r);
}
END_TEST

START_TEST(test_deep_names)
{
    /* Wildcards far from the top (more than 63 labels) still match. */
    char entry[300] = "*", host[300] = "x", mid[300] = "p", mhost[300] = "p";
    for (int i = 0; i < 70; i++) {
        strcat(entry, ".a");
        strcat(host, ".a");
    }
    strcat(host, "");
    ck_assert_int_eq(allow1(entry, host), 1);
    ck_assert_int_eq(allow1(entry, host + 2), 0); /* the apex */
    for (int i = 0; i < 66; i++) {
        strcat(mid, ".b");
        strcat(mhost, ".b");
    }
    strcat(mid, ".*.c.d");
    strcat(mhost, ".zz.c.d");
    ck_assert_int_eq(allow1(mid, mhost), 1);
    mhost[strlen(mhost) - 7] = '\0';
    strcat(mhost, ".y.zz.c.d");
    ck_assert_int_eq(allow1(mid, mhost), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("egress-matcher");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_exact);
    tcase_add_test(tc, test_leading_wildcard);
    tcase_add_test(tc, test_middle_wildcard);
    tcase_add_test(tc, test_ports);
    tcase_add_test(tc, test_ip);
    tcase_add_test(tc, test_deny_wins);
    tcase_add_test(tc, test_most_specific_reported);
    tcase_add_test(tc, test_invalid_entries);
    tcase_add_test(tc, test_valid_entries);
    tcase_add_test(tc, test_punycode);
    tcase_add_test(tc, test_resolved_addresses);
    tcase_add_test(tc, test_network_disabled);
    tcase_add_test(tc, test_check_host_api);
    tcase_add_test(tc, test_builtin_lists_parse);
    tcase_add_test(tc, test_deep_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
