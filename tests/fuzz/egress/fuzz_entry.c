/*
 * libFuzzer: allowlist entries and hosts. Invariants: every accepted entry
 * matches the host it names (wildcard-free, port-free entries); the
 * normalised key re-parses to itself; nothing reads out of bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/matcher.h"
#include "egress/rule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 400)
        return 0;
    char s[401];
    memcpy(s, data, size);
    s[size] = '\0';
    char why[256];
    struct egress_rule r;
    struct egress_target t;
    (void)egress_target_parse(s, &t, why, sizeof why);
    if (egress_rule_parse(s, &r, why, sizeof why) != 0)
        return 0;
    if (strlen(r.key) > EGRESS_NAME_MAX + 2)
        abort();
    /* The key is already normal: parsing it again changes nothing. */
    struct egress_rule again;
    char key[EGRESS_KEY_CAP + 2];
    if (r.kind == EGRESS_IP6)
        snprintf(key, sizeof key, "[%s]", r.key);
    else
        snprintf(key, sizeof key, "%s", r.key);
    if (egress_rule_parse(key, &again, why, sizeof why) != 0 || strcmp(again.key, r.key) != 0 ||
        again.kind != r.kind)
        abort();
    if (r.kind == EGRESS_SUFFIX || r.kind == EGRESS_MIDDLE || r.port)
        return 0;
    struct egress_matcher *m = egress_matcher_new();
    if (!m)
        return 0;
    if (egress_matcher_add(m, &r, s, EGRESS_FROM_SPEC_ALLOW) == 0 &&
        egress_target_parse(key, &t, why, sizeof why) == 0 && !egress_matcher_find(m, &t))
        abort();
    egress_matcher_free(m);
    return 0;
}
