/*
 * Matcher lookups per second with 10,000 entries, against the same lookups
 * with 10 entries in the same run (the cost must not grow with the list).
 * Target: >= 2 million lookups/s on one core with 10,000 entries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "egress/rules.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* n entries: a third exact names, a third leading wildcards, a third middle-label. */
static struct egress_rules *make_rules(size_t n)
{
    char **v = calloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i] = malloc(64);
        switch (i % 3) {
        case 0: snprintf(v[i], 64, "api%zu.service%zu.example.com", i, i % 97); break;
        case 1: snprintf(v[i], 64, "*.tenant%zu.example.net", i); break;
        default: snprintf(v[i], 64, "bedrock.*.region%zu.example.org", i); break;
        }
    }
    struct egress_rules *r = NULL;
    char err[256];
    if (egress_rules_new(1, (const char *const *)v, n, NULL, 0, &r, err, sizeof err) != 0) {
        fprintf(stderr, "rules: %s\n", err);
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return r;
}

#define NHOSTS 1024

static double run(const struct egress_rules *r, const struct egress_target *t, long iters,
                  long *allowed)
{
    struct egress_verdict v;
    long ok = 0;
    double t0 = now();
    for (long i = 0; i < iters; i++)
        ok += egress_rules_decide(r, &t[i & (NHOSTS - 1)], &v);
    double dt = now() - t0;
    *allowed = ok;
    return (double)iters / dt;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 5000000;
    static struct egress_target t[NHOSTS];
    /* Hits of each kind and misses (which probe every candidate key). */
    for (int i = 0; i < NHOSTS; i++) {
        char h[128];
        switch (i % 4) {
        case 0: snprintf(h, sizeof h, "api%d.service%d.example.com:443", (i * 3) % 9999, ((i * 3) % 9999) % 97); break;
        case 1: snprintf(h, sizeof h, "a.b.tenant%d.example.net:443", (i * 3 + 1) % 10000); break;
        case 2: snprintf(h, sizeof h, "bedrock.us-east-%d.region%d.example.org:443", i, (i * 3 + 2) % 10000); break;
        default: snprintf(h, sizeof h, "deep.miss.host%d.nowhere.example.io:443", i); break;
        }
        char why[256];
        if (egress_target_parse(h, &t[i], why, sizeof why) != 0) {
            fprintf(stderr, "%s: %s\n", h, why);
            return 1;
        }
    }
    struct egress_rules *small = make_rules(10), *big = make_rules(10000);
    long a_small, a_big;
    run(big, t, iters / 10, &a_big); /* warm-up */
    double r_small = run(small, t, iters, &a_small);
    double r_big = run(big, t, iters, &a_big);

    /* Parsing the host text too, as a proxy request does. */
    char texts[NHOSTS][128];
    for (int i = 0; i < NHOSTS; i++)
        egress_target_format(&t[i], texts[i], sizeof texts[i]);
    struct egress_target tmp;
    struct egress_verdict v;
    char why[256];
    long parse_iters = iters / 2;
    double t0 = now();
    for (long i = 0; i < parse_iters; i++) {
        egress_target_parse(texts[i & (NHOSTS - 1)], &tmp, why, sizeof why);
        egress_rules_decide(big, &tmp, &v);
    }
    double r_parse = (double)parse_iters / (now() - t0);

    printf("matcher: %.2f M lookups/s with 10 entries, %.2f M lookups/s with 10,000 entries "
           "(ratio %.2f; %ld of %ld allowed)\n",
           r_small / 1e6, r_big / 1e6, r_big / r_small, a_big, iters);
    printf("matcher: %.2f M parse+judge/s with 10,000 entries\n", r_parse / 1e6);
    printf("matcher: target >= 2 M lookups/s with 10,000 entries: %s\n",
           r_big >= 2e6 ? "met" : "NOT met");
    egress_rules_free(small);
    egress_rules_free(big);
    return 0;
}
