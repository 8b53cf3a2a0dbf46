/* SPDX-License-Identifier: MIT */
/* sim_wl.c: the service workload of sim_wl.h. */
#include "sim_wl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"

enum {
    CHAOS_NONE,
    CHAOS_CLOSE,
    CHAOS_ABORT
};

/* What one side's application sees of one link. */
typedef struct side {
    pure_link *l;         /* NULL once on_closed ran */
    int known;            /* connected (client) or accepted (server) */
    int closes;           /* on_closed calls: must end at exactly 1 */
    int after_close;      /* callbacks after on_closed: must stay 0 */
    int bad;              /* messages wrong, out of order or of the wrong size */
    pure_close_info info; /* as on_closed reported it (reason not kept) */
    uint64_t closed_at;
    uint64_t sent, recv; /* messages accepted by pure_link_send / delivered */
    uint64_t send_hash, recv_hash;
    int chaos; /* what this side does to the link at chaos_at messages */
    uint64_t chaos_at;
    int did;         /* what it did */
    int established; /* client: on_established ran */
    /* server: echoes waiting for room (u32 length, bytes), sent on on_writable */
    uint8_t *q;
    size_t qhead, qlen, qcap;
    uint64_t dropped_replies; /* echoes refused (PURE_ECLOSED after the server closed) */
    struct wl_link *link;     /* server: the link its hello named */
    uint32_t ch;              /* the channel its messages go on (wl_cfg.channels) */
    /* datagrams (wl_cfg.datagrams): queued by pure_link_send_datagram, delivered, and which
     * indices arrived (one byte each, messages + 2 of them); the stats as on_closed read them */
    uint64_t dg_queued, dg_recv;
    uint8_t *dg_seen;
    pure_datagram_stats dg_st;
    int finished; /* wl_cfg.finish: the client finished / the server heard it (and closed) */
} side;

static int64_t side_send(side *sd, const void *d, size_t n);

typedef struct wl_link {
    wl *w;
    uint32_t id;
    side c;  /* the client's view */
    side *s; /* the server's view, once the hello named the link */
    uint64_t planned;
    int edge_tried; /* sent max_message_size + 1 once (refused) */
    /* cancels (wl_cfg.cancels), by message: CX_* bits; cx_cap entries */
    uint8_t *cx;
    uint64_t cx_cap;
} wl_link;

enum {
    CX_ASKED = 1,     /* the client cancelled it or gave it a deadline */
    CX_CLIENT = 2,    /* the client's on_channel_cancelled(SENT) reported it */
    CX_SERVER = 4,    /* the server's on_channel_cancelled reported it */
    CX_DELIVERED = 8, /* the server delivered it */
};
static const uint8_t tombstone[4] = {'C', 'N', 'C', 'L'}; /* the echo of a cancelled message */

/* The link's cancel record of message id (NULL past it: then nothing is cancelled). */
static uint8_t *cx_of(wl_link *k, uint64_t id)
{
    if (id >= k->cx_cap) {
        uint64_t cap = k->cx_cap ? k->cx_cap : 64;
        while (cap <= id)
            cap *= 2;
        k->cx = realloc(k->cx, cap);
        memset(k->cx + k->cx_cap, 0, cap - k->cx_cap);
        k->cx_cap = cap;
    }
    return &k->cx[id];
}

typedef struct counter {
    int64_t bytes;
    int64_t blocks;
    int mismatch;
    uint32_t fail_every; /* wl_cfg.fail_every, once armed */
    uint64_t calls, refused;
} counter;

struct wl {
    wl_cfg cfg;
    sim *s;
    int cli, srv;
    pure_settings cst, sst;
    counter cmem, smem;
    uint64_t refused_sends; /* sends and replies refused with PURE_ENOMEM (made again) */
    wl_link *links;
    side *srv_sides; /* server sides, one per accepted link (all generations) */
    uint32_t n_srv, cap_srv;
    int server_dead;    /* the current server context belongs to a killed process */
    int client_freed;   /* the client's context was freed with links alive */
    pure_ctx *dead_ctx; /* a killed server's context, freed at wl_free */
    uint8_t *scratch;
    uint64_t checked_at; /* the last time the done test scanned the links */
    uint8_t **sh_bufs;   /* every shared buffer made (wl_cfg.shared) */
    size_t n_sh, cap_sh;
    uint64_t rekeys; /* the links' rekeys, both sides, counted at on_closed */
};

/* What the plan says of message k's cancel: 0 none, 1 cancelled later, 2 a deadline. */
static int cx_plan(const wl *w, uint32_t id, uint64_t k)
{
    if (w->cfg.cancels <= 0 || k == 0)
        return 0;
    double r =
        (double)(sim_mix(w->cfg.seed ^ ((uint64_t)id << 24) ^ k ^ 0xca9ce1ull) % 10000) / 1e4;
    return r < w->cfg.cancels ? 1 : r < 2 * w->cfg.cancels ? 2 : 0;
}

/* The done tests scan every link: at most once per virtual millisecond, or a run with 1,000
 * links would spend its time scanning after each event. */
static int scan_due(wl *w)
{
    uint64_t now = sim_now(w->s);
    if (w->checked_at && now < w->checked_at + SIM_MS)
        return 0;
    w->checked_at = now;
    return 1;
}

/* A running hash of a direction's messages, eight bytes at a step (a soak hashes gigabytes). */
static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        h = (h ^ x) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h ^ n;
}

/* ---- shared sends (wl_cfg.shared): each buffer carries its release count before its bytes,
 * and stays allocated until wl_free has checked that count is exactly 1 ---- */

static wl *current;
static int is_server_side(wl *w, void *user);

static void shared_release(void *user, const void *data, size_t len)
{
    (void)user, (void)len;
    ((uint32_t *)((uint8_t *)data - 8))[0]++;
}

static int64_t send_shared(wl *w, side *sd, const void *d, size_t n)
{
    if (w->n_sh == w->cap_sh) {
        w->cap_sh = w->cap_sh ? w->cap_sh * 2 : 1024;
        w->sh_bufs = realloc(w->sh_bufs, w->cap_sh * sizeof *w->sh_bufs);
    }
    uint8_t *b = calloc(1, 8 + n + 1);
    memcpy(b + 8, d, n);
    pure_ctx *ctx = sim_ctx(w->s, is_server_side(w, sd) ? w->srv : w->cli);
    pure_shared *sh;
    int rc = pure_shared_new(ctx, b + 8, n, shared_release, NULL, &sh);
    if (rc) {
        free(b);
        return rc; /* PURE_EMSGSIZE for the edge one over the limit */
    }
    w->sh_bufs[w->n_sh++] = b;
    int64_t id = pure_link_send_shared(sd->l, sd->ch, sh);
    pure_shared_unref(sh); /* the link holds its own: the release comes with the link's */
    return id;
}

/* What the side's application sends goes on its channel (channel 0: pure_link_send). */
static int64_t side_send(side *sd, const void *d, size_t n)
{
    wl *w = current;
    if (w->cfg.shared && sd->ch)
        return send_shared(w, sd, d, n);
    return pure_link_send_on(sd->l, sd->ch, d, n);
}

/* ---- the plan: message k of link id (k = 0 is the 8-byte hello naming the link) ---- */

static uint32_t max_msg(const wl *w)
{
    return w->cfg.max_message_size;
}

static size_t plan_size(const wl *w, uint32_t id, uint64_t k)
{
    if (k == 0)
        return 8;
    uint64_t h = sim_mix(w->cfg.seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)id << 32) ^ k);
    uint32_t r = (uint32_t)(h % 100), top = w->cfg.max_size;
    h >>= 8;
    size_t n;
    if (r < 55)
        n = h % 65;
    else if (r < 80)
        n = h % 16385;
    else if (r < 95)
        n = h % ((uint64_t)top + 1);
    else {
        /* the edges: empty, one byte, the limit, the windows and queues */
        const size_t edges[] = {0,          1,
                                max_msg(w), max_msg(w) - 1,
                                1u << 20,   (1u << 20) + 1,
                                256u << 10, (256u << 10) - 3};
        n = edges[h % (sizeof edges / sizeof edges[0])];
        if (n > top)
            n = top;
    }
    return n;
}

static void plan_bytes(const wl *w, uint32_t id, uint64_t k, uint8_t *out, size_t n)
{
    if (k == 0) {
        for (int i = 0; i < 8; i++)
            out[i] = (uint8_t)((uint64_t)id >> (8 * i));
        return;
    }
    uint64_t x = sim_mix(w->cfg.seed ^ ((uint64_t)id << 20) ^ (k << 44) ^ 0x5bd1e995ull) | 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(out + i, &x, 8);
    }
    x ^= x << 13;
    for (; i < n; i++)
        out[i] = (uint8_t)(x >> (8 * (i & 7)));
}

/* Checks message k of link id; returns 1 if it is exactly the planned one. */
static int plan_check(wl *w, uint32_t id, uint64_t k, const uint8_t *d, size_t n)
{
    if (n != plan_size(w, id, k))
        return 0;
    plan_bytes(w, id, k, w->scratch, n);
    return memcmp(d, w->scratch, n) == 0;
}

/* ---- allocator ---- */

static void *c_alloc(void *user, size_t n)
{
    counter *c = user;
    if (c->fail_every && ++c->calls % c->fail_every == 0) {
        c->refused++;
        return NULL;
    }
    size_t *p = malloc(n + 16);
    if (!p)
        return NULL;
    p[0] = n;
    c->bytes += (int64_t)n;
    c->blocks++;
    return (uint8_t *)p + 16;
}

static void c_free(void *user, void *q, size_t n)
{
    counter *c = user;
    size_t *p = (size_t *)((uint8_t *)q - 16);
    if (p[0] != n)
        c->mismatch++;
    c->bytes -= (int64_t)p[0];
    c->blocks--;
    free(p);
}

/* ---- callbacks ---- */

static wl *the_wl(void *ctx_user)
{
    return ctx_user;
}

/* Every callback of a side goes through here first: one after on_closed is a violation. */
static int live(side *sd)
{
    if (sd->closes) {
        sd->after_close++;
        return 0;
    }
    return 1;
}

static void client_pump(wl_link *k);

/* ---- datagrams (wl_cfg.datagrams) ---- */

enum {
    DG_HEAD = 12
}; /* u32 link id, u32 index, u32 length; then the derived bytes */

static uint8_t dg_byte(const wl *w, uint32_t id, uint32_t index, size_t j)
{
    uint64_t x = sim_mix(w->cfg.seed ^ ((uint64_t)id << 40) ^ ((uint64_t)index << 8) ^ 0xd6ull);
    return (uint8_t)(x >> (8 * (j % 8))) ^ (uint8_t)j;
}

/* The client's datagram `index` beside its message of the same number. */
static void dg_send(wl *w, wl_link *k, uint32_t index)
{
    side *c = &k->c;
    size_t max = pure_link_datagram_max(c->l);
    if (max < DG_HEAD)
        return;
    size_t n = DG_HEAD + (size_t)(sim_mix(w->cfg.seed ^ k->id ^ ((uint64_t)index << 20)) %
                                  (max - DG_HEAD + 1));
    uint8_t d[65536];
    uint32_t h[3] = {k->id, index, (uint32_t)n};
    memcpy(d, h, sizeof h);
    for (size_t j = DG_HEAD; j < n; j++)
        d[j] = dg_byte(w, k->id, index, j);
    int rc = pure_link_send_datagram(c->l, d, n);
    if (rc == 0)
        c->dg_queued++;
    else if (rc != PURE_EAGAIN && rc != PURE_ENOMEM && rc != PURE_ECLOSED)
        c->bad++;
}

static void on_datagram(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    wl *w = current;
    int server = is_server_side(w, user);
    side *sd = server ? user : &((wl_link *)user)->c;
    if (!live(sd))
        return;
    uint32_t h[3] = {0, 0, 0};
    if (n >= DG_HEAD)
        memcpy(h, d, sizeof h);
    uint32_t want = server ? (sd->link ? sd->link->id : h[0]) : ((wl_link *)user)->id;
    int ok =
        n >= DG_HEAD && h[0] == want && h[0] < w->cfg.links && h[1] <= w->cfg.messages && h[2] == n;
    for (size_t j = DG_HEAD; ok && j < n; j++)
        ok = d[j] == dg_byte(w, h[0], h[1], j);
    if (ok && !sd->dg_seen)
        sd->dg_seen = calloc(w->cfg.messages + 2, 1);
    if (!ok || sd->dg_seen[h[1]]++) { /* not whole, or twice */
        sd->bad++;
        return;
    }
    sd->dg_recv++;
    if (server) { /* the echo, from inside the callback */
        int rc = pure_link_send_datagram(l, d, n);
        if (rc == 0)
            sd->dg_queued++;
        else if (rc != PURE_EAGAIN && rc != PURE_ENOMEM && rc != PURE_ECLOSED &&
                 rc != PURE_EMSGSIZE) /* EMSGSIZE: this side's path took a smaller size */
            sd->bad++;
    }
}

static void do_chaos(wl *w, side *sd)
{
    if (!sd->l || sd->did)
        return;
    sd->did = sd->chaos;
    if (sd->chaos == CHAOS_CLOSE)
        pure_link_close(sd->l, 0, "chaos close");
    else if (sd->chaos == CHAOS_ABORT)
        pure_link_abort(sd->l, PURE_CLOSE_APP + 7, "chaos abort");
    (void)w;
}

static void client_pump(wl_link *k)
{
    wl *w = k->w;
    side *c = &k->c;
    if (c->did)
        return; /* closed or aborted: pure_link_send says PURE_ECLOSED now */
    while (c->l && c->sent < k->planned) {
        if (c->chaos && !c->did && c->sent >= c->chaos_at) {
            do_chaos(w, c);
            return;
        }
        if (!k->edge_tried && c->sent == k->planned / 2 && c->sent > 0) {
            /* one byte over the limit: refused at once, nothing else changes */
            k->edge_tried = 1;
            if (side_send(c, w->scratch, (size_t)max_msg(w) + 1) != PURE_EMSGSIZE)
                c->bad++;
        }
        size_t n = plan_size(w, k->id, c->sent);
        plan_bytes(w, k->id, c->sent, w->scratch, n);
        int plan = c->ch ? cx_plan(w, k->id, c->sent) : 0;
        int64_t rc = plan == 2
                         ? pure_link_send_on_deadline(c->l, c->ch, w->scratch, n,
                                                      sim_now(w->s) + (1 + c->sent % 16) * SIM_MS)
                         : side_send(c, w->scratch, n);
        if (rc == PURE_EAGAIN)
            return; /* on_writable calls again */
        if (rc == PURE_ENOMEM) {
            w->refused_sends++; /* nothing was queued: wl_run's retry calls again */
            return;
        }
        if (rc < 0)
            return; /* closing: on_closed tells */
        if ((uint64_t)rc != c->sent)
            c->bad++;
        c->send_hash = fnv(c->send_hash, w->scratch, n);
        if (plan == 2)
            *cx_of(k, c->sent) |= CX_ASKED;
        if (w->cfg.datagrams && c->l)
            dg_send(w, k, (uint32_t)c->sent);
        c->sent++;
        /* cancel the message sent two before: queued, in flight, or delivered already */
        if (c->sent >= 3 && cx_plan(w, k->id, c->sent - 3) == 1 && c->l && c->ch) {
            int crc = pure_link_cancel(c->l, c->ch, c->sent - 3);
            if (crc == 0)
                *cx_of(k, c->sent - 3) |= CX_ASKED;
            else if (crc != PURE_EALREADY && crc != PURE_ESTATE && crc != PURE_ENOMEM)
                c->bad++; /* ENOMEM: not recorded, nothing changed (the message goes on) */
        }
    }
    if (w->cfg.finish && c->ch == 0 && !w->cfg.keep_open) {
        if (c->l && c->sent == k->planned && !c->did && !c->finished) {
            c->finished = 1; /* the echoes still come; the server closes after them */
            if (pure_link_finish(c->l) != 0)
                c->bad++;
        }
        return;
    }
    if (c->l && c->sent == k->planned && (!w->cfg.echo || c->recv == k->planned) &&
        !w->cfg.keep_open && !c->did) {
        c->did = CHAOS_CLOSE;
        pure_link_close(c->l, 0, "done");
    }
}

/* wl_cfg.finish: the server closes once the client finished and every echo was sent. */
static void server_close_if_finished(side *sd)
{
    if (sd->finished == 1 && sd->l && !sd->did && !sd->qlen) {
        sd->finished = 2;
        pure_link_close(sd->l, 0, "finished");
    }
}

static void server_flush(wl *w, side *sd)
{
    while (sd->l && sd->qlen) {
        uint8_t *m = sd->q + sd->qhead;
        uint32_t n;
        memcpy(&n, m, 4);
        int64_t rc = side_send(sd, m + 4, n);
        if (rc == PURE_EAGAIN)
            return;
        if (rc == PURE_ENOMEM) {
            w->refused_sends++; /* kept at the queue's head: wl_run's retry flushes again */
            return;
        }
        if (rc < 0)
            sd->dropped_replies++;
        else
            sd->sent++;
        sd->qhead += 4 + n;
        sd->qlen -= 4 + n;
    }
    sd->qhead = 0;
    server_close_if_finished(sd);
    (void)w;
}

static void server_queue(side *sd, const uint8_t *d, size_t n)
{
    if (sd->qhead + sd->qlen + 4 + n > sd->qcap) {
        if (sd->qlen)
            memmove(sd->q, sd->q + sd->qhead, sd->qlen);
        sd->qhead = 0;
        if (sd->qlen + 4 + n > sd->qcap) {
            size_t cap = sd->qcap ? sd->qcap : 4096;
            while (cap < sd->qlen + 4 + n)
                cap *= 2;
            sd->q = realloc(sd->q, cap);
            sd->qcap = cap;
        }
    }
    uint32_t len = (uint32_t)n;
    memcpy(sd->q + sd->qhead + sd->qlen, &len, 4);
    memcpy(sd->q + sd->qhead + sd->qlen + 4, d, n);
    sd->qlen += 4 + n;
}

static int on_accept(pure_link *l, const char *service, const uint8_t *key, void *user)
{
    wl *w = the_wl(user);
    if (w->n_srv == w->cap_srv)
        return -1; /* more links than planned: refuse (counted by the client's check) */
    side *sd = &w->srv_sides[w->n_srv++];
    memset(sd, 0, sizeof *sd);
    sd->l = l;
    sd->known = 1;
    sd->send_hash = sd->recv_hash = 0xcbf29ce484222325ull;
    pure_link_set_user(l, sd);
    return 0;
}

static void on_established(pure_link *l, void *user)
{
    wl_link *k = user;
    k->c.established = 1;
    if (live(&k->c))
        client_pump(k);
}

/* Message sd->recv of the client's arrived (stone: it was cancelled, d is the tombstone). */
static void server_message(wl *w, side *sd, const uint8_t *d, size_t n, int stone)
{
    wl_link *k = NULL;
    if (sd->recv == 0) {
        /* the hello names the link */
        uint64_t id = 0;
        if (n == 8)
            for (int i = 0; i < 8; i++)
                id |= (uint64_t)d[i] << (8 * i);
        if (n != 8 || id >= w->cfg.links || w->links[id].s) {
            sd->bad++;
            return;
        }
        w->links[id].s = sd;
        sd->link = &w->links[id];
    }
    k = sd->link;
    if (!stone && (!k || !plan_check(w, k->id, sd->recv, d, n)))
        sd->bad++;
    if (!stone && k && k->cx_cap) {
        uint8_t *x = cx_of(k, sd->recv);
        if (*x & CX_CLIENT)
            sd->bad++; /* the client was told it was cancelled */
        *x |= CX_DELIVERED;
    }
    sd->recv_hash = fnv(sd->recv_hash, d, n);
    sd->recv++;
    if (w->cfg.echo) {
        if (sd->qlen) {
            server_queue(sd, d, n); /* keep the order: behind what already waits */
        } else {
            int64_t rc = side_send(sd, d, n); /* the reply, from inside on_message */
            if (rc == PURE_EAGAIN)
                server_queue(sd, d, n);
            else if (rc == PURE_ENOMEM)
                server_queue(sd, d, n), w->refused_sends++; /* sent by wl_run's retry */
            else if (rc < 0)
                sd->dropped_replies++;
            else
                sd->sent++;
        }
    }
    if (sd->chaos && sd->recv >= sd->chaos_at)
        do_chaos(w, sd);
}

static void client_message(wl *w, wl_link *k, const uint8_t *d, size_t n)
{
    side *c = &k->c;
    int stone = k->cx_cap && n == 4 && !memcmp(d, tombstone, 4) &&
                (*cx_of(k, c->recv) & CX_SERVER); /* the echo of a message the server dropped */
    if (!stone && !plan_check(w, k->id, c->recv, d, n))
        c->bad++;
    c->recv_hash = fnv(c->recv_hash, d, n);
    c->recv++;
    client_pump(k);
}

static int is_server_side(wl *w, void *user)
{
    return (side *)user >= w->srv_sides && (side *)user < w->srv_sides + w->cap_srv;
}

static void on_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    wl *w = current;
    if (is_server_side(w, user)) {
        if (live(user))
            server_message(w, user, d, n, 0);
    } else {
        wl_link *k = user;
        if (live(&k->c))
            client_message(w, k, d, n);
    }
}

/* A channel's messages: the side must be on that channel (the server's takes it from the first
 * message, its hello). */
static void on_channel_message(pure_link *l, void *user, uint32_t ch, const uint8_t *d, size_t n)
{
    wl *w = current;
    side *sd = is_server_side(w, user) ? user : &((wl_link *)user)->c;
    if (is_server_side(w, user) && sd->recv == 0)
        sd->ch = ch;
    if (ch != sd->ch) {
        sd->bad++;
        return;
    }
    on_message(l, user, d, n);
}

/* A cancel: the client's own (flags PURE_CANCELLED_SENT), or the server's report of one. */
static void on_channel_cancelled(pure_link *l, void *user, uint32_t ch, uint64_t id, uint32_t flags)
{
    wl *w = current;
    side *sd = is_server_side(w, user) ? user : &((wl_link *)user)->c;
    if (!live(sd))
        return;
    wl_link *k = is_server_side(w, user) ? sd->link : (wl_link *)user;
    if (!k || ch != sd->ch || !(*cx_of(k, id) & CX_ASKED)) {
        sd->bad++; /* a message nobody cancelled */
        return;
    }
    uint8_t *x = cx_of(k, id);
    if (!is_server_side(w, user)) {
        if (!(flags & PURE_CANCELLED_SENT) || (*x & (CX_CLIENT | CX_DELIVERED)))
            sd->bad++;
        *x |= CX_CLIENT;
        return;
    }
    if (flags != 0 || id != sd->recv || (*x & (CX_SERVER | CX_DELIVERED)))
        sd->bad++;
    *x |= CX_SERVER;
    server_message(w, sd, tombstone, sizeof tombstone, 1); /* in its place: a tombstone echoed */
}

static void on_writable(pure_link *l, void *user)
{
    wl *w = current;
    if (is_server_side(w, user)) {
        if (live(user))
            server_flush(w, user);
    } else {
        wl_link *k = user;
        if (live(&k->c))
            client_pump(k);
    }
}

static void on_peer_finished(pure_link *l, void *user)
{
    wl *w = current;
    side *sd = is_server_side(w, user) ? user : &((wl_link *)user)->c;
    if (!live(sd))
        return;
    /* only the client finishes, after its last message: each came before this */
    if (!is_server_side(w, user) || !w->cfg.finish || !sd->link || sd->ch != 0 || sd->finished ||
        sd->recv != sd->link->planned) {
        sd->bad++;
        return;
    }
    sd->finished = 1;
    server_close_if_finished(sd);
}

static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    wl *w = current;
    side *sd = is_server_side(w, user) ? user : &((wl_link *)user)->c;
    sd->closes++;
    sd->info = *info;
    sd->info.reason = NULL;
    if (sd->ch) /* what the check compares is the side's channel's */
        pure_link_channel_unacked(l, sd->ch, &sd->info.first_unacked, &sd->info.next_id);
    pure_link_datagram_stats(l, &sd->dg_st);
    pure_link_stats ls;
    pure_link_stats_get(l, &ls);
    w->rekeys += ls.rekeys;
    sd->closed_at = sim_now(w->s);
    sd->l = NULL;
}

static const pure_callbacks callbacks = {
    .on_accept = on_accept,
    .on_established = on_established,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_peer_finished = on_peer_finished,
    .on_closed = on_closed,
    .on_channel_message = on_channel_message,
    .on_channel_cancelled = on_channel_cancelled,
    .on_datagram = on_datagram,
};

/* ---- set-up and runs ---- */

wl *wl_new(const wl_cfg *cfg)
{
    wl *w = calloc(1, sizeof *w);
    w->cfg = *cfg;
    if (!w->cfg.max_message_size)
        w->cfg.max_message_size = 4u << 20;
    if (!w->cfg.idle_timeout)
        w->cfg.idle_timeout = 5 * SIM_S;
    if (w->cfg.max_size > w->cfg.max_message_size)
        w->cfg.max_size = w->cfg.max_message_size;
    current = w;
    w->s = sim_new(cfg->seed);
    w->scratch = malloc((size_t)w->cfg.max_message_size + 16);
    w->links = calloc(cfg->links, sizeof *w->links);
    w->cap_srv = 2 * cfg->links + 8;
    w->srv_sides = calloc(w->cap_srv, sizeof *w->srv_sides);
    for (int server = 0; server < 2; server++) {
        pure_settings *st = server ? &w->sst : &w->cst;
        pure_settings_default(st);
        st->callbacks = &callbacks;
        st->user = w;
        st->allow_any = 1;
        st->max_message_size = w->cfg.max_message_size;
        st->max_datagram_size = w->cfg.datagrams ? 65535 : 0;
        if (w->cfg.rekey_packets)
            st->rekey_after_packets = w->cfg.rekey_packets;
        st->idle_timeout = w->cfg.idle_timeout;
        if (w->cfg.max_receive_memory)
            st->max_receive_memory = w->cfg.max_receive_memory;
        /* at least the default 10 s: at 10% loss each way one handshake in ~10^5 fails all of
         * the 7 INITs 5 s allow (seed 12 of the 10%-loss scenario drew one) */
        st->handshake_timeout = w->cfg.idle_timeout > 10 * SIM_S ? w->cfg.idle_timeout : 10 * SIM_S;
        st->alloc = c_alloc;
        st->free = c_free;
        st->alloc_user = server ? &w->smem : &w->cmem;
        if (w->cfg.null_crypto)
            st->crypto = &pure_crypto_null;
        if (w->cfg.tweak)
            w->cfg.tweak(st, server);
        int ep = sim_add(w->s, st);
        if (server) {
            w->srv = ep;
            pure_ctx_add_service(sim_ctx(w->s, ep), "echo");
        } else {
            w->cli = ep;
        }
    }
    sim_set_path(w->s, w->cli, w->srv, &w->cfg.path);
    sim_set_path(w->s, w->srv, w->cli, &w->cfg.path);
    return w;
}

sim *wl_sim(wl *w)
{
    return w->s;
}
int wl_client(const wl *w)
{
    return w->cli;
}
int wl_server(const wl *w)
{
    return w->srv;
}

/* Draws what a side does to its link: nothing, or a close or abort after some messages. */
static void draw_chaos(wl *w, side *sd, double close, double abort_, uint64_t planned)
{
    double r = sim_rand01(w->s);
    sd->chaos = r < close ? CHAOS_CLOSE : r < close + abort_ ? CHAOS_ABORT : CHAOS_NONE;
    sd->chaos_at = planned ? sim_rand(w->s) % (planned + 1) : 0;
}

void wl_start(wl *w)
{
    current = w;
    pure_addr to = sim_addr(w->s, w->srv);
    const uint8_t *key = pure_ctx_public_key(sim_ctx(w->s, w->srv));
    for (uint32_t i = 0; i < w->cfg.links; i++) {
        wl_link *k = &w->links[i];
        if (k->c.known && k->c.closes == 0)
            continue; /* still open */
        free(k->cx);
        free(k->c.dg_seen);
        memset(k, 0, sizeof *k);
        k->w = w;
        k->id = i;
        k->planned = 1 + w->cfg.messages;
        k->c.ch = i % (w->cfg.channels + 1);
        k->c.send_hash = k->c.recv_hash = 0xcbf29ce484222325ull;
        draw_chaos(w, &k->c, w->cfg.client_close, w->cfg.client_abort, k->planned);
        if (pure_connect(sim_ctx(w->s, w->cli), &to, key, "echo", k, &k->c.l, sim_now(w->s)) == 0) {
            k->c.known = 1;
            client_pump(k); /* messages may be queued before the handshake completes */
        } else {
            k->c.bad++;
        }
    }
}

/* Server chaos is drawn when the hello binds a server side to its link: do it lazily here. */
static void arm_server_chaos(wl *w)
{
    for (uint32_t i = 0; i < w->cfg.links; i++) {
        wl_link *k = &w->links[i];
        if (k->s && !k->s->chaos && !k->s->did && !k->s->chaos_at) {
            draw_chaos(w, k->s, w->cfg.server_close, w->cfg.server_abort, k->planned);
            if (!k->s->chaos_at)
                k->s->chaos_at = 1;
        }
    }
}

/* Is the run over? keep_open runs end when every open link has carried its plan both ways;
 * the others when every link the applications know of is closed on both sides. */
static int run_done(void *arg)
{
    wl *w = arg;
    if (!scan_due(w))
        return 0;
    arm_server_chaos(w);
    for (uint32_t i = 0; i < w->cfg.links; i++) {
        wl_link *k = &w->links[i];
        int busy = w->cfg.keep_open ? k->c.l && (k->c.sent < k->planned ||
                                                 (w->cfg.echo && k->c.recv < k->planned))
                                    : k->c.known && k->c.closes == 0;
        if (busy)
            return 0;
    }
    if (!w->cfg.keep_open && !w->server_dead)
        for (uint32_t i = 0; i < w->n_srv; i++)
            if (w->srv_sides[i].known && w->srv_sides[i].closes == 0)
                return 0;
    return 1;
}

/* Every link the client opened is established or closed already. */
static int handshakes_done(const wl *w)
{
    for (uint32_t i = 0; i < w->cfg.links; i++)
        if (w->links[i].c.known && !w->links[i].c.established && !w->links[i].c.closes)
            return 0;
    return 1;
}

/* What the applications do every 10 ms while allocations may fail: sends and replies refused
 * with PURE_ENOMEM are made again (no callback tells them memory is back). */
static void retry_refused(wl *w)
{
    for (uint32_t i = 0; i < w->cfg.links; i++)
        if (w->links[i].c.l && w->links[i].c.closes == 0)
            client_pump(&w->links[i]);
    for (uint32_t i = 0; i < w->n_srv; i++) {
        side *sd = &w->srv_sides[i];
        if (sd->known && sd->l && sd->closes == 0 && sd->qlen)
            server_flush(w, sd);
    }
}

int wl_run(wl *w, uint64_t until)
{
    current = w;
    w->checked_at = 0;
    if (!w->cfg.fail_every)
        return sim_run(w->s, run_done, w, until);
    if (!w->cmem.fail_every) { /* the handshakes first, with memory */
        uint64_t start = sim_now(w->s);
        while (!handshakes_done(w) && sim_now(w->s) < start + 10 * SIM_S)
            sim_run(w->s, NULL, NULL, sim_now(w->s) + SIM_MS);
        w->cmem.fail_every = w->smem.fail_every = w->cfg.fail_every;
    }
    int done = 0;
    while (!done && sim_now(w->s) < until) {
        uint64_t next = sim_now(w->s) + 10 * SIM_MS;
        done = sim_run(w->s, run_done, w, next < until ? next : until);
        retry_refused(w);
    }
    w->cmem.fail_every = w->smem.fail_every = 0; /* the checks and frees run with memory */
    return done;
}

uint64_t wl_refused_allocations(const wl *w)
{
    return w->cmem.refused + w->smem.refused;
}

void wl_more(wl *w, uint32_t messages)
{
    current = w;
    for (uint32_t i = 0; i < w->cfg.links; i++) {
        wl_link *k = &w->links[i];
        if (k->c.l) {
            k->planned += messages;
            client_pump(k);
        }
    }
}

void wl_kill_server(wl *w)
{
    sim_kill(w->s, w->srv);
    w->server_dead = 1;
}

void wl_restart_server(wl *w)
{
    current = w;
    pure_ctx *old = sim_replace(w->s, w->srv, &w->sst);
    pure_ctx_add_service(sim_ctx(w->s, w->srv), "echo");
    /* a killed process reports nothing: its context is freed at the end, callbacks ignored */
    if (w->dead_ctx)
        pure_ctx_free(w->dead_ctx);
    w->dead_ctx = old;
    for (uint32_t i = 0; i < w->n_srv; i++)
        w->srv_sides[i].known = 0; /* the old process's links: no longer anyone's */
    for (uint32_t i = 0; i < w->cfg.links; i++)
        w->links[i].s = NULL;
    w->server_dead = 0;
}

void wl_free_client(wl *w)
{
    current = w;
    pure_ctx *old = sim_replace(w->s, w->cli, &w->cst);
    w->client_freed = 1;
    pure_ctx_free(old); /* every live link must be reported closed, once */
}

uint64_t wl_last_client_close(const wl *w)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i < w->cfg.links; i++)
        if (w->links[i].c.closes && w->links[i].c.closed_at > t)
            t = w->links[i].c.closed_at;
    return t;
}

uint32_t wl_client_closed_with(const wl *w, int error)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->cfg.links; i++)
        n += w->links[i].c.closes && w->links[i].c.info.error == error;
    return n;
}

uint64_t wl_delivered(const wl *w)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < w->cfg.links; i++)
        n += w->links[i].c.recv;
    for (uint32_t i = 0; i < w->n_srv; i++)
        n += w->srv_sides[i].recv;
    return n;
}

uint64_t wl_rekeys(const wl *w)
{
    return w->rekeys;
}

int64_t wl_live_bytes(const wl *w)
{
    return w->cmem.bytes + w->smem.bytes;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (bad < 8) {                                                                             \
            fprintf(stderr, "%s seed %llu link %u: ", name, (unsigned long long)w->cfg.seed, i);   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
        bad++;                                                                                     \
    } while (0)

/* One side's datagram counters at its on_closed agree with what its application did: every
 * one queued went out or was dropped (none left uncounted), every one delivered was counted,
 * and no more were lost than sent. */
static int dg_check(const wl *w, const side *sd, const char *who)
{
    const pure_datagram_stats *st = &sd->dg_st;
    if (!sd->closes || (!sd->dg_queued && !sd->dg_recv && !st->sent && !st->received))
        return 0;
    if (st->sent + st->dropped != sd->dg_queued || st->received != sd->dg_recv ||
        st->lost > st->sent) {
        fprintf(stderr,
                "seed %llu: %s datagrams: queued %llu, stats sent %llu + dropped %llu; got %llu, "
                "stats received %llu; lost %llu\n",
                (unsigned long long)w->cfg.seed, who, (unsigned long long)sd->dg_queued,
                (unsigned long long)st->sent, (unsigned long long)st->dropped,
                (unsigned long long)sd->dg_recv, (unsigned long long)st->received,
                (unsigned long long)st->lost);
        return 1;
    }
    return 0;
}

int wl_check(wl *w, const char *name)
{
    int bad = 0;
    uint32_t i = 0;
    for (uint32_t j = 0; j < w->n_srv; j++) {
        side *s = &w->srv_sides[j];
        if (s->bad || s->after_close || s->closes > 1)
            FAIL("server side %u: %d bad messages, %d callbacks after on_closed, %d on_closed", j,
                 s->bad, s->after_close, s->closes);
        bad += dg_check(w, s, "server");
    }
    for (i = 0; i < w->cfg.links; i++) {
        wl_link *k = &w->links[i];
        side *c = &k->c, *s = k->s;
        if (c->bad || c->after_close || c->closes > 1)
            FAIL("client: %d bad messages, %d callbacks after on_closed, %d on_closed", c->bad,
                 c->after_close, c->closes);
        if (!c->known)
            continue;
        bad += dg_check(w, c, "client");
        if (s && s->closes && c->closes &&
            (s->dg_recv > c->dg_st.sent || c->dg_recv > s->dg_st.sent))
            FAIL("datagrams: server got %llu of the %llu the client sent, client %llu of %llu",
                 (unsigned long long)s->dg_recv, (unsigned long long)c->dg_st.sent,
                 (unsigned long long)c->dg_recv, (unsigned long long)s->dg_st.sent);
        uint64_t srecv = s ? s->recv : 0, ssent = s ? s->sent : 0;
        /* delivered in order, once, whole (each was checked on arrival); never more than sent */
        if (srecv > c->sent || c->recv > ssent)
            FAIL("more delivered than sent: server got %llu of %llu, client got %llu of %llu",
                 (unsigned long long)srecv, (unsigned long long)c->sent,
                 (unsigned long long)c->recv, (unsigned long long)ssent);
        if (s && srecv == c->sent && !k->cx_cap && s->recv_hash != c->send_hash)
            FAIL("hash of the client's messages differs at the server");
        /* what a close reports as acknowledged was delivered to the peer's application */
        /* (or was reported cancelled to the client: the server may not have reached it) */
        uint64_t reached = srecv;
        while (reached < c->info.first_unacked && reached < k->cx_cap &&
               (k->cx[reached] & CX_CLIENT))
            reached++;
        /* the one case no report can get right (docs/protocol.md, "Receive memory"): the
         * client's link ended (its close done or given up, or its abort) while the server still
         * held acknowledged messages back for its receive budget; the server then aborted and
         * dropped them, after the client had reported */
        int dropped_later = s && s->did == CHAOS_ABORT && s->closed_at > c->closed_at;
        if (c->closes && c->info.first_unacked > reached && !w->dead_ctx && !dropped_later)
            FAIL("client's on_closed says %llu acknowledged, server got %llu (client did %d, "
                 "error %d; server did %d, closes %d, error %d)",
                 (unsigned long long)c->info.first_unacked, (unsigned long long)srecv, c->did,
                 c->info.error, s ? s->did : -1, s ? s->closes : -1, s ? s->info.error : 0);
        if (c->closes && c->info.next_id != c->sent)
            FAIL("client's on_closed next_id %llu, sent %llu", (unsigned long long)c->info.next_id,
                 (unsigned long long)c->sent);
        if (s && s->closes && s->info.first_unacked > c->recv)
            FAIL("server's on_closed says %llu acknowledged, client got %llu (server did %d, "
                 "error %d; client closes %d, error %d)",
                 (unsigned long long)s->info.first_unacked, (unsigned long long)c->recv, s->did,
                 s->info.error, c->closes, c->info.error);
        /* a graceful close that reports everything acknowledged delivered everything; unless
         * the server closed too: after the peer's graceful close, messages sent here may be left
         * unacknowledged with error 0 (pure.h, pure_close_info), and the check above holds the
         * report to what the server really got */
        if (c->closes && c->info.error == 0 && c->did == CHAOS_CLOSE && !(s && s->did) &&
            c->info.first_unacked != c->info.next_id)
            FAIL("graceful close reported %llu of %llu acknowledged",
                 (unsigned long long)c->info.first_unacked, (unsigned long long)c->info.next_id);
        /* cancels: the client was told of exactly those the server dropped (on a link nobody
         * disturbed: else the server may not have reached one), never of one delivered */
        for (uint64_t m = 0; m < k->cx_cap; m++) {
            uint8_t x = k->cx[m];
            if ((x & CX_CLIENT) && (x & CX_DELIVERED))
                FAIL("message %llu delivered, yet reported cancelled to the client",
                     (unsigned long long)m);
            if ((x & (CX_CLIENT | CX_SERVER)) && !(x & CX_ASKED))
                FAIL("message %llu reported cancelled, never cancelled", (unsigned long long)m);
        }
        /* a link nobody disturbed carried its whole plan both ways and closed cleanly */
        int disturbed = c->did == CHAOS_ABORT || (c->did == CHAOS_CLOSE && c->chaos) ||
                        (s && s->did) || w->dead_ctx || w->server_dead || w->client_freed;
        for (uint64_t m = 0; !disturbed && m < k->cx_cap; m++)
            if (!(k->cx[m] & CX_CLIENT) != !(k->cx[m] & CX_SERVER))
                FAIL("message %llu: client %s cancelled, server %s", (unsigned long long)m,
                     k->cx[m] & CX_CLIENT ? "told" : "not told",
                     k->cx[m] & CX_SERVER ? "dropped it" : "did not drop it");
        if (!disturbed && !w->cfg.keep_open &&
            (c->sent != k->planned || srecv != k->planned ||
             (w->cfg.echo && c->recv != k->planned) || c->closes != 1 || c->info.error != 0))
            FAIL("undisturbed link: sent %llu, server got %llu, echoes %llu of %llu, closes %d "
                 "(%s)",
                 (unsigned long long)c->sent, (unsigned long long)srecv,
                 (unsigned long long)c->recv, (unsigned long long)k->planned, c->closes,
                 pure_strerror(c->info.error));
        if (!disturbed && !w->cfg.keep_open && w->cfg.finish && c->ch == 0 &&
            (!c->finished || !s || s->finished != 2))
            FAIL("half-closed link: client finished %d, server %d", c->finished,
                 s ? s->finished : -1);
        /* the client's CLOSE goes again until the server answers it, for at most idle_timeout:
         * on a lossy path the server may find the client gone first (PURE_ETIMEDOUT) */
        int lossy = w->cfg.path.loss > 0 || w->cfg.path.queue;
        if (!disturbed && !w->cfg.keep_open && s &&
            (s->closes != 1 || !(s->info.error == 0 || (lossy && s->info.error == PURE_ETIMEDOUT))))
            FAIL("undisturbed link: server side closes %d (%s)", s->closes,
                 pure_strerror(s->info.error));
    }
    return bad;
}

int wl_free(wl *w)
{
    current = w;
    int bad = 0;
    uint32_t i = 0;
    const char *name = "wl_free";
    if (w->dead_ctx) /* before the simulator: its on_closed calls read the clock */
        pure_ctx_free(w->dead_ctx);
    sim_free(w->s);
    for (uint32_t j = 0; j < w->cfg.links; j++) {
        if (w->links[j].c.known && w->links[j].c.closes != 1) {
            i = j;
            FAIL("client link reported closed %d times", w->links[j].c.closes);
        }
    }
    if (w->cmem.bytes || w->smem.bytes || w->cmem.blocks || w->smem.blocks || w->cmem.mismatch ||
        w->smem.mismatch)
        FAIL("memory left: client %lld bytes in %lld blocks, server %lld in %lld; size "
             "mismatches %d/%d",
             (long long)w->cmem.bytes, (long long)w->cmem.blocks, (long long)w->smem.bytes,
             (long long)w->smem.blocks, w->cmem.mismatch, w->smem.mismatch);
    /* every context is gone: each shared buffer was released, exactly once */
    for (size_t j = 0; j < w->n_sh; j++) {
        uint32_t released = ((uint32_t *)w->sh_bufs[j])[0];
        if (released != 1) {
            i = 0;
            FAIL("shared buffer %zu of %zu released %u times", j, w->n_sh, released);
        }
        free(w->sh_bufs[j]);
    }
    free(w->sh_bufs);
    for (uint32_t j = 0; j < w->cap_srv; j++) {
        free(w->srv_sides[j].q);
        free(w->srv_sides[j].dg_seen);
    }
    free(w->srv_sides);
    for (uint32_t j = 0; j < w->cfg.links; j++) {
        free(w->links[j].cx);
        free(w->links[j].c.dg_seen);
    }
    free(w->links);
    free(w->scratch);
    free(w);
    current = NULL;
    return bad;
}
