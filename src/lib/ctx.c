/* SPDX-License-Identifier: MIT */
/* ctx.c: the context: settings, its creation and end, services and allow list, statistics, and
 * the public read/write/timeout entry points that dispatch datagrams and time to links (what it
 * keeps of its links is in registry.c). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flight.h"
#include "handshake.h"
#include "lifecycle.h"
#include "link.h"
#include "link_recv.h"
#include "link_send.h"
#include "recovery.h"
#include "registry.h"
#include "rxmem.h"
#include "timers.h"
#include "tparams.h"

static void *default_alloc(void *user, size_t n)
{
    (void)user;
    return malloc(n);
}

static void default_free(void *user, void *p, size_t n)
{
    (void)user;
    (void)n;
    free(p);
}

static void *default_realloc(void *user, void *p, size_t old, size_t n)
{
    (void)user;
    (void)old;
    return realloc(p, n);
}

void *pure_mem_realloc(const pure_alloc *a, void *p, size_t old, size_t n)
{
    if (a->realloc)
        return a->realloc(a->user, p, old, n);
    void *q = a->alloc(a->user, n);
    if (q && p) {
        memcpy(q, p, old < n ? old : n);
        a->free(a->user, p, old);
    }
    return q;
}

void pure_settings_default(pure_settings *s)
{
    memset(s, 0, sizeof *s);
    s->version = PURE_SETTINGS_VERSION;
    s->max_udp_payload = 1472;
    s->max_message_size = 16u << 20;
    s->send_backlog = 8u << 20;
    s->send_queue = 256u << 10;
    s->recv_window = 1u << 20;
    s->recv_window_max = 16u << 20;
    s->idle_timeout = 30ull * 1000000000;
    s->handshake_timeout = 10ull * 1000000000;
    s->max_ack_delay = 5ull * 1000000;
    s->ack_every = 24;
    s->congestion = PURE_CC_CUBIC;
    s->max_links = 1000000;
    s->handshake_load = 1024;
    s->rekey_after_packets = PURE_REKEY_MAX_PACKETS;
    s->rekey_after_time = 120ull * 1000000000;
    s->max_receive_memory = 256ull << 20;
    s->max_failed_opens = 1ull << 36;
    s->respond_to_unknown = 1;
    s->max_half_open = 16384;
    s->half_open_per_addr = 64;
    s->inits_per_addr = 32;
    s->max_channels = 16;
    s->max_datagram_size = 65535;
}

/* The fields settings version 3 added, for a caller built against an older pure.h. */
static void settings_v3_defaults(pure_settings *s)
{
    pure_settings d;
    pure_settings_default(&d);
    s->max_receive_memory = d.max_receive_memory;
    s->max_failed_opens = d.max_failed_opens;
    s->respond_to_unknown = d.respond_to_unknown;
    s->max_half_open = d.max_half_open;
    s->half_open_per_addr = d.half_open_per_addr;
    s->inits_per_addr = d.inits_per_addr;
    s->realtime = NULL;
    s->realtime_user = NULL;
}

/* The fields settings version 4 added: no index partition. */
static void settings_v4_defaults(pure_settings *s)
{
    s->index_top_bits = 0;
    s->index_top = 0;
}

/* The fields settings version 5 added: no server id. */
static void settings_v5_defaults(pure_settings *s)
{
    s->server_id_bits = 0;
    s->server_id = 0;
}

/* The fields settings version 6 added: no channels nor datagrams (a caller that never heard of
 * them). */
static void settings_v6_defaults(pure_settings *s)
{
    s->max_channels = 0;
    s->max_datagram_size = 0;
}

/* A copy of settings holds the private key: wiped as it goes out of scope, on every path. */
static void wipe_settings(pure_settings *s)
{
    pure_wipe(s, sizeof *s);
}

/* The caller's settings in full: a caller built against an older pure.h has a shorter struct, of
 * which only what it has is read; the rest takes the defaults of its version. */
static void settings_from_caller(pure_settings *full, const pure_settings *user_settings)
{
    if (user_settings->version >= 6) {
        *full = *user_settings;
    } else if (user_settings->version == 5) {
        memcpy(full, user_settings, offsetof(pure_settings, max_channels));
        settings_v6_defaults(full);
    } else if (user_settings->version == 4) {
        memcpy(full, user_settings, offsetof(pure_settings, server_id_bits));
        settings_v5_defaults(full);
        settings_v6_defaults(full);
    } else if (user_settings->version == 3) {
        memcpy(full, user_settings, offsetof(pure_settings, index_top_bits));
        settings_v4_defaults(full);
        settings_v5_defaults(full);
        settings_v6_defaults(full);
    } else {
        memcpy(full, user_settings, offsetof(pure_settings, max_receive_memory));
        settings_v3_defaults(full);
        settings_v4_defaults(full);
        settings_v5_defaults(full);
        settings_v6_defaults(full);
        /* before version 3 the default was 2^32, above the AEAD's limit: take the limit */
        if (full->rekey_after_packets > PURE_REKEY_MAX_PACKETS)
            full->rekey_after_packets = PURE_REKEY_MAX_PACKETS;
    }
}

int pure_ctx_new(const pure_settings *user_settings, pure_ctx **out)
{
    if (!user_settings || !out || user_settings->version < 1 ||
        user_settings->version > PURE_SETTINGS_VERSION)
        return PURE_EINVAL;
    pure_settings full __attribute__((cleanup(wipe_settings)));
    settings_from_caller(&full, user_settings);
    const pure_settings *s = &full;
    if (s->max_receive_memory < s->max_message_size || s->max_failed_opens == 0 ||
        s->max_half_open == 0 || s->half_open_per_addr == 0 || s->inits_per_addr == 0 ||
        s->rekey_after_packets < PURE_REKEY_MIN_PACKETS ||
        s->rekey_after_packets > PURE_REKEY_MAX_PACKETS ||
        s->index_top_bits > PURE_INDEX_TOP_BITS_MAX || s->index_top >> s->index_top_bits ||
        s->server_id_bits > PURE_SERVER_ID_BITS_MAX || s->server_id >> s->server_id_bits ||
        s->index_top_bits + s->server_id_bits > 16 || s->max_channels > PURE_MAX_CHANNELS)
        return PURE_EINVAL;
    if (s->max_udp_payload < PURE_MIN_UDP_PAYLOAD || s->max_udp_payload > PURE_MAX_UDP_PAYLOAD ||
        s->max_message_size == 0 || s->max_message_size > (1u << 30) || s->send_backlog < 4096 ||
        s->recv_window < 4096 || s->recv_window_max < s->recv_window ||
        s->recv_window_max > (1ull << 32) || s->max_links == 0 || s->ack_every == 0 ||
        s->idle_timeout > PURE_TIMEOUT_MAX || s->keepalive > PURE_TIMEOUT_MAX ||
        s->handshake_timeout > PURE_TIMEOUT_MAX || s->rekey_after_time > PURE_TIMEOUT_MAX ||
        s->max_ack_delay > PURE_MAX_ACK_DELAY_MAX ||
        (s->congestion != PURE_CC_CUBIC && s->congestion != PURE_CC_NEWRENO))
        return PURE_EINVAL;
    static const uint8_t zero[PURE_KEY_LEN];
    if (memcmp(s->private_key, zero, PURE_KEY_LEN) == 0)
        return PURE_EINVAL;
    pure_alloc a = {s->alloc ? s->alloc : default_alloc, s->free ? s->free : default_free,
                    s->alloc_user, s->alloc ? s->realloc : default_realloc};
    if (!!s->alloc != !!s->free || (s->realloc && !s->alloc))
        return PURE_EINVAL; /* a realloc must belong to the injected alloc/free */
    pure_ctx *ctx = pure_mem_alloc(&a, sizeof *ctx);
    if (!ctx)
        return PURE_ENOMEM;
    memset(ctx, 0, sizeof *ctx);
    ctx->arrived = UINT64_MAX; /* no read under way: pure_rx_time gives its caller's now */
    ctx->read_horizon = UINT64_MAX;
    ctx->s = *s;
    ctx->alloc = a;
    pure_registry_init(ctx);
    ctx->crypto = s->crypto ? (const pure_crypto *)s->crypto : &pure_crypto_default;
    /* a caller built against an older pure.h has a shorter callbacks struct: copy only what its
     * settings version knows (version 1: up to on_closed) */
    if (s->callbacks)
        memcpy(&ctx->cb, s->callbacks,
               s->version >= 7   ? sizeof ctx->cb
               : s->version >= 6 ? offsetof(pure_callbacks, on_channel_cancelled)
               : s->version >= 2 ? offsetof(pure_callbacks, on_channel_message)
                                 : offsetof(pure_callbacks, on_acked));
    if (ctx->crypto->dh_public(ctx->public_key, s->private_key) != 0) {
        pure_mem_free(&a, ctx, sizeof *ctx);
        return PURE_EINVAL;
    }
    if (pure_cookie_init(&ctx->cookies, ctx->crypto, 0) != 0 ||
        pure_admit_init(&ctx->admit, ctx->crypto, ctx->public_key, s->random, s->random_user) !=
            0 ||
        pure_ctx_random(ctx, (uint8_t *)&ctx->pn_rng, sizeof ctx->pn_rng) != 0) {
        pure_ctx_free(ctx);
        return PURE_ECRYPTO;
    }
    *out = ctx;
    return 0;
}

void pure_ctx_free(pure_ctx *ctx)
{
    if (!ctx)
        return;
    /* Every live link is reported closed first, while all of them are still whole (an
     * application may look at another link from on_closed); nothing is freed until the end. */
    ctx->depth++;
    ctx->freeing = 1;
    for (uint32_t i = 0; i < ctx->table.cap; i++) {
        pure_link *l = pure_table_at(&ctx->table, i);
        if (l && l->state != PURE_LS_CLOSED) {
            l->state = PURE_LS_CLOSED; /* sends and closes from on_closed now fail */
            pure_link_notify_closed(l, PURE_ECLOSED, "context freed");
        }
    }
    for (uint32_t i = 0; i < ctx->table.cap; i++) {
        pure_link *l = pure_table_at(&ctx->table, i);
        if (l) {
            l->dead_next = ctx->dead;
            ctx->dead = l;
        }
    }
    pure_table_free(&ctx->table, &ctx->alloc); /* the links are off it: none is found again */
    ctx->depth = 1;
    pure_link_end_call(ctx); /* frees them all */
    pure_registry_free(ctx);
    pure_mem_free(&ctx->alloc, ctx->services, ctx->cap_services * sizeof *ctx->services);
    pure_mem_free(&ctx->alloc, ctx->allow, ctx->cap_allow * sizeof *ctx->allow);
    pure_cookie_wipe(&ctx->cookies);
    pure_admit_free(&ctx->admit, &ctx->alloc);
    pure_tparams_free(ctx);
    if (ctx->ssc) {
        pure_sscache_wipe(ctx->ssc);
        pure_mem_free(&ctx->alloc, ctx->ssc, sizeof *ctx->ssc);
    }
    pure_alloc a = ctx->alloc;
    pure_wipe(ctx, sizeof *ctx);
    pure_mem_free(&a, ctx, sizeof *ctx);
}

int pure_ctx_add_service(pure_ctx *ctx, const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (!ctx || len == 0 || len > PURE_SERVICE_MAX)
        return PURE_EINVAL;
    if (pure_ctx_service_index(ctx, name, len) >= 0)
        return 0;
    if (pure_ctx_grow_array(ctx, (void **)&ctx->services, &ctx->cap_services, ctx->n_services,
                            sizeof *ctx->services))
        return PURE_ENOMEM;
    memset(ctx->services[ctx->n_services], 0, sizeof *ctx->services);
    memcpy(ctx->services[ctx->n_services++], name, len);
    return 0;
}

int pure_ctx_allow(pure_ctx *ctx, const uint8_t pub[PURE_KEY_LEN])
{
    if (!ctx || !pub)
        return PURE_EINVAL;
    if (pure_ctx_allowed(ctx, pub) && !ctx->s.allow_any)
        return 0;
    if (pure_ctx_grow_array(ctx, (void **)&ctx->allow, &ctx->cap_allow, ctx->n_allow,
                            sizeof *ctx->allow))
        return PURE_ENOMEM;
    memcpy(ctx->allow[ctx->n_allow++], pub, PURE_KEY_LEN);
    return 0;
}

const uint8_t *pure_ctx_public_key(const pure_ctx *ctx)
{
    return ctx->public_key;
}

void pure_ctx_stats_get(const pure_ctx *ctx, pure_ctx_stats *st)
{
    *st = ctx->st;
    st->links = ctx->table.used;
}

void pure_ctx_guard_stats_get(const pure_ctx *ctx, pure_guard_stats *st, size_t size)
{
    if (!ctx || !st)
        return;
    memcpy(st, &ctx->guard, size < sizeof ctx->guard ? size : sizeof ctx->guard);
}

void pure_ctx_set_clock(pure_ctx *ctx, uint64_t (*clock)(void *user), void *user)
{
    if (!ctx)
        return;
    ctx->clock = clock;
    ctx->clock_user = user;
}

uint64_t pure_ctx_clock(pure_ctx *ctx)
{
    if (ctx->clock) {
        uint64_t t = ctx->clock(ctx->clock_user);
        if (t > ctx->now)
            ctx->now = t;
    }
    return ctx->now;
}

void pure_ctx_set_max_in_flight(pure_ctx *ctx, uint64_t bytes)
{
    if (!ctx)
        return;
    ctx->max_in_flight = bytes;
    if (ctx->depth == 0)
        pure_flight_wake(ctx); /* a higher limit lets waiting links go now */
}

uint64_t pure_ctx_deadline(const pure_ctx *ctx)
{
    /* Refiling the deadlines the last datagrams moved (pure_timers_defer) and settling the heap's
     * top (timerheap.h: deadlines moved later) change what the heap holds, not what the context
     * would do: to the application it is unchanged. */
    pure_ctx *c = (pure_ctx *)ctx;
    if (c->timer_dirty_n)
        pure_timers_flush(c);
    if (ctx->ctl_len || ctx->pending_head)
        return ctx->now; /* something is queued: write now */
    return pure_timerheap_min(&c->timers);
}

/* Memory came free while links were held back by max_receive_memory: wake them (rxmem.c). */
static void rx_wake(pure_ctx *ctx, uint64_t now)
{
    pure_rxmem_waking w;
    pure_rxmem_wake_begin(ctx, &w);
    for (pure_link *l; (l = pure_rxmem_wake_next(ctx, &w)) != NULL;)
        pure_link_recv_unheld(l, now);
}

void pure_ctx_read_backlog(pure_ctx *ctx, int more)
{
    if (ctx)
        ctx->read_horizon = more ? ctx->newest_arrival : UINT64_MAX;
}

void pure_ctx_timeout(pure_ctx *ctx, uint64_t now)
{
    ctx->depth++;
    if (ctx->timer_dirty_n)
        pure_timers_flush(ctx); /* at the time those datagrams were read */
    ctx->now = now;
    /* Take every due link off the heap first, then run them: a timer that re-arms itself at or
     * before `now` runs at the next call, never in a loop here. */
    pure_link *due = NULL;
    for (pure_link *l; (l = pure_timerheap_pop_due(&ctx->timers, now)) != NULL;) {
        l->timer_next = due;
        due = l;
    }
    while (due) {
        pure_link *l = due;
        due = l->timer_next;
        l->timer_next = NULL;
        ctx->st.timers_fired++;
        if (l->state != PURE_LS_CLOSED)
            pure_link_on_timer(l, now);
    }
    if (ctx->rx_wake)
        rx_wake(ctx, now);
    pure_link_end_call(ctx);
}

/* Writes one link's next packets (with pad, one padded packet joining another link's burst),
 * then what follows every write: the application hears that its queue has room, the link goes
 * to the back of the send list if it has more (round robin; a link that wrote nothing is
 * requeued only when it was asked to join a burst, so the first loop cannot spin), and its timer
 * moves. */
static int64_t write_link(pure_ctx *ctx, pure_link *l, uint8_t *buf, size_t cap, size_t *segment,
                          uint64_t now, int pad)
{
    int64_t n = pure_link_write(l, buf, cap, segment, now, pad);
    if (n > 0)
        pure_link_check_writable(l); /* what was queued is on its way: maybe more fits */
    if ((n > 0 || pad == PURE_WRITE_PAD || pad == PURE_WRITE_JOIN) && pure_link_wants_send(l, now))
        pure_ctx_mark_pending(ctx, l);
    pure_timers_update(l, now);
    return n;
}

int64_t pure_ctx_write(pure_ctx *ctx, uint8_t *buf, size_t cap, size_t *segment, pure_addr *to,
                       uint64_t now)
{
    if (!ctx || !buf || !segment || !to)
        return PURE_EINVAL;
    if (cap < ctx->s.max_udp_payload)
        return PURE_ENOBUFS;
    ctx->depth++;
    ctx->now = now;
    int64_t n = 0;
    size_t lead_mss = 0; /* the first link's packet size: a larger burst is a PMTU probe */
    const pure_ctl *c = pure_ctx_ctl_pop(ctx);
    if (c) {
        memcpy(buf, c->data, c->len);
        *segment = c->len;
        *to = c->to;
        n = c->len;
    }
    while (n == 0) {
        pure_link *l = pure_ctx_pending_pop(ctx);
        if (!l)
            break;
        if (l->state == PURE_LS_CLOSED)
            continue;
        uint64_t first_pn = pure_rtb_next_pn(&l->rtb);
        int lead = ctx->pending_head && pure_addr_equal(&ctx->pending_head->peer, &l->peer);
        n = write_link(ctx, l, buf, cap, segment, now, lead ? PURE_WRITE_LEAD : PURE_WRITE_OWN);
        if (n > 0) {
            lead_mss = l->mss;
            ctx->last_burst_link = l->local_index;
            ctx->last_burst_pn = first_pn;
            *to = l->peer;
        }
    }
    /* More links sending to the same address join the burst: a listener answering many links of
     * one peer, or many links waking at once, then costs one sendmsg per burst instead of one per
     * link, and reaches the peer as a few GRO buffers instead of a flood of datagrams that
     * overflows its socket. Small segments take one packet of each link, padded to the segment
     * size; larger ones take each link's packets of exactly that size, and one shorter packet
     * ends the burst: nobody's ACK is padded to a full-size packet. */
    size_t seg = *segment;
    while (n > 0 && seg <= lead_mss && (size_t)n % seg == 0 && cap - (size_t)n >= seg &&
           ctx->pending_head && pure_addr_equal(&ctx->pending_head->peer, to)) {
        pure_link *l = pure_ctx_pending_pop(ctx);
        if (l->state == PURE_LS_CLOSED)
            continue;
        int small = seg <= PURE_COALESCE_MAX;
        size_t seg2 = seg;
        int64_t m = write_link(ctx, l, buf + n, small ? seg : cap - (size_t)n, &seg2, now,
                               small ? PURE_WRITE_PAD : PURE_WRITE_JOIN);
        if (m <= 0)
            break; /* this one cannot join (not open, or nothing fits): it goes next time */
        n += m;
    }
    if (n > 0) {
        ctx->st.datagrams_out += (uint64_t)((n + (int64_t)*segment - 1) / (int64_t)*segment);
        ctx->st.bursts_out++;
    }
    pure_link_end_call(ctx);
    return n;
}

static int read_datagram(pure_ctx *ctx, const pure_addr *from, uint8_t *d, size_t n, uint64_t now)
{
    if (!from || (!d && n))
        return PURE_EINVAL;
    ctx->depth++;
    ctx->now = now;
    ctx->st.datagrams_in++;
    int rc, junk = 0; /* junk: it cannot be Pure (no type of ours, a wrong length for its type) */
    if (n < 1) {
        rc = PURE_EPROTO;
        junk = 1;
    } else {
        switch (d[0]) {
        case PURE_PKT_DATA0:
        case PURE_PKT_DATA1: {
            if (n < PURE_DATA_HEADER + PURE_TAG_LEN) {
                rc = PURE_EPROTO;
                junk = 1;
                break;
            }
            pure_link *l = pure_ctx_table_find(ctx, pure_wire_index(d));
            if (!l || l->state == PURE_LS_CLOSED || l->state == PURE_LS_HANDSHAKE) {
                ctx->st.dropped_unknown_link++;
                rc = PURE_EINVAL;
                break;
            }
            /* A datagram that ends its link says so with PURE_ECLOSED, whatever ended it (on_closed
             * has the reason): every other code means the datagram was dropped, the link as it
             * was. l stays allocated until end_call. */
            uint8_t was_notified = l->closed_notified;
            rc = pure_link_recv(l, from, d, n, now);
            if (!was_notified && l->closed_notified)
                rc = PURE_ECLOSED;
            if (l->state != PURE_LS_CLOSED)
                pure_timers_defer(l); /* refiled once for a batch (timers.h) */
            break;
        }
        case PURE_PKT_INIT:
            pure_hs_on_init(ctx, from, d, n, now);
            rc = 0;
            break;
        case PURE_PKT_RESP:
            rc = pure_hs_on_resp(ctx, from, d, n, now);
            junk = n < PURE_RESP_MIN || n > PURE_RESP_MAX;
            break;
        case PURE_PKT_COOKIE:
            rc = pure_hs_on_cookie(ctx, from, d, n, now);
            junk = rc == PURE_EPROTO;
            break;
        case PURE_PKT_REJECT:
            rc = pure_hs_on_reject(ctx, from, d, n, now);
            junk = rc == PURE_EPROTO;
            break;
        case PURE_PKT_VERSION:
            rc = pure_hs_on_version(ctx, from, d, n, now);
            junk = rc == PURE_EPROTO;
            break;
        case PURE_PKT_INIT_V:
            pure_hs_on_init_v(ctx, from, d, n, now);
            rc = 0;
            break;
        default: rc = PURE_EPROTO; junk = 1;
        }
    }
    if (rc == PURE_EPROTO)
        ctx->st.dropped_malformed++;
    /* Junk from an address a handshake of ours waits on: what listens there is not Pure, unless a
     * RESP comes within the hint's grace (one forged datagram cannot end the handshake). */
    if (junk && ctx->hs_flight_head)
        pure_hs_on_junk(ctx, from, now);
    if (ctx->rx_wake)
        rx_wake(ctx, now);
    pure_link_end_call(ctx);
    return rc;
}

int pure_ctx_read_at(pure_ctx *ctx, const pure_addr *from, uint8_t *d, size_t n, unsigned ecn,
                     uint64_t arrived, uint64_t now)
{
    if (!ctx)
        return PURE_EINVAL;
    /* The datagram's ECN bits and arrival, read by the link that authenticates the packet; a
     * callback that re-enters with another datagram sets its own, and the outer one has used
     * them by then. */
    uint64_t outer_arrived = ctx->arrived;
    uint8_t outer_ecn = ctx->rx_ecn;
    ctx->arrived = arrived < now ? arrived : now; /* a time after now is taken as now */
    if (ctx->arrived > ctx->newest_arrival)
        ctx->newest_arrival = ctx->arrived;
    ctx->rx_ecn = (uint8_t)(ecn & 3);
    int rc = read_datagram(ctx, from, d, n, now);
    ctx->arrived = outer_arrived;
    ctx->rx_ecn = outer_ecn;
    return rc;
}

int pure_ctx_read_ecn(pure_ctx *ctx, const pure_addr *from, uint8_t *d, size_t n, unsigned ecn,
                      uint64_t now)
{
    return pure_ctx_read_at(ctx, from, d, n, ecn, now, now);
}

int pure_ctx_read(pure_ctx *ctx, const pure_addr *from, uint8_t *d, size_t n, uint64_t now)
{
    return pure_ctx_read_at(ctx, from, d, n, 0, now, now);
}

int pure_ctx_unreachable(pure_ctx *ctx, const pure_addr *addr, int kind, const uint8_t *quoted,
                         size_t quoted_len, uint64_t now)
{
    if (!ctx || !addr || kind < PURE_UNREACH_PORT || kind > PURE_UNREACH_FAMILY)
        return PURE_EINVAL;
    if (!ctx->hs_flight_head)
        return 0; /* a listener's usual case: an ICMP error for a client gone away */
    ctx->depth++;
    ctx->now = now;
    int n = pure_hs_unreachable(ctx, addr, kind, quoted, quoted_len, now);
    pure_link_end_call(ctx);
    return n;
}

/* ---- path MTU reports: ctx_mtu.c ---- */

/* ---- version (errors: errors.c; keys and key text: keytext.c) ---- */

const char *pure_version(void)
{
    return PURE_VERSION_STRING;
}
