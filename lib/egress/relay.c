#include "egress/relay.h"

#include <stdlib.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "egress/pair_int.h"

/* Stop reading a side while the other's output holds this much. */
#define RELAY_HIGH (1024 * 1024)

struct side {
    struct bufferevent *bev;
    int eof;         /* no more bytes will come from this side */
    int shut;        /* we half-closed its write direction */
    uint64_t *count; /* bytes read from this side */
};

struct relay {
    struct pair_link link;
    struct egress_pair *p;
    struct side s[2]; /* 0: client (sandbox), 1: upstream */
};

static void relay_free(struct relay *r)
{
    pair_link_del(&r->link);
    for (int i = 0; i < 2; i++)
        if (r->s[i].bev)
            bufferevent_free(r->s[i].bev);
    free(r);
}

static void relay_close_link(struct pair_link *l)
{
    relay_free((struct relay *)l);
}

static int idx(struct relay *r, struct bufferevent *bev)
{
    return r->s[0].bev == bev ? 0 : 1;
}

/* Once a side ended and its bytes were flushed, half-close the other; once
 * both ended and both outputs drained, the tunnel is done. */
static int maybe_finish(struct relay *r)
{
    for (int i = 0; i < 2; i++) {
        struct side *from = &r->s[i], *to = &r->s[1 - i];
        if (from->eof && !to->shut &&
            evbuffer_get_length(bufferevent_get_output(to->bev)) == 0) {
            shutdown(bufferevent_getfd(to->bev), SHUT_WR);
            to->shut = 1;
        }
    }
    if (r->s[0].shut && r->s[1].shut) {
        relay_free(r);
        return 1;
    }
    return 0;
}

static void pump(struct relay *r, int i)
{
    struct side *from = &r->s[i], *to = &r->s[1 - i];
    struct evbuffer *in = bufferevent_get_input(from->bev);
    struct evbuffer *out = bufferevent_get_output(to->bev);
    size_t n = evbuffer_get_length(in);
    if (n) {
        *from->count += n;
        evbuffer_add_buffer(out, in);
    }
    if (evbuffer_get_length(out) >= RELAY_HIGH)
        bufferevent_disable(from->bev, EV_READ);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct relay *r = arg;
    pump(r, idx(r, bev));
}

static void write_cb(struct bufferevent *bev, void *arg)
{
    struct relay *r = arg;
    int i = idx(r, bev);
    struct side *other = &r->s[1 - i];
    /* bev drained below its low watermark: let the other side read again. */
    if (!other->eof)
        bufferevent_enable(other->bev, EV_READ);
    maybe_finish(r);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct relay *r = arg;
    int i = idx(r, bev);
    if (what & BEV_EVENT_EOF) {
        pump(r, i);
        r->s[i].eof = 1;
        bufferevent_disable(bev, EV_READ);
        maybe_finish(r);
        return;
    }
    /* Error or timeout: nothing more can flow reliably. */
    relay_free(r);
}

int relay_start(struct egress_pair *p, struct bufferevent *client, struct bufferevent *upstream)
{
    struct relay *r = calloc(1, sizeof *r);
    if (!r) {
        bufferevent_free(client);
        bufferevent_free(upstream);
        return -1;
    }
    r->p = p;
    r->s[0].bev = client;
    r->s[0].count = &p->bytes_up;
    r->s[1].bev = upstream;
    r->s[1].count = &p->bytes_down;
    r->link.close = relay_close_link;
    pair_link_add(p, &r->link);
    for (int i = 0; i < 2; i++) {
        bufferevent_setcb(r->s[i].bev, read_cb, write_cb, event_cb, r);
        bufferevent_setwatermark(r->s[i].bev, EV_WRITE, RELAY_HIGH / 2, 0);
        bufferevent_set_timeouts(r->s[i].bev, NULL, NULL);
        bufferevent_enable(r->s[i].bev, EV_READ | EV_WRITE);
    }
    pump(r, 0);
    pump(r, 1);
    return 0;
}
