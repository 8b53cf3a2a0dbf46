/* SPDX-License-Identifier: MIT */
#include "sim.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/codel.h"

#define MAX_EP 8
#define MAX_BN 8
#define WRITE_BUF (64 * 1024)

typedef struct dgram {
    uint64_t at;
    uint64_t seq; /* tie-break so equal times keep send order */
    int from, to;
    pure_addr src;
    uint32_t len;
    uint8_t spoofed; /* src was forged when it was sent (sim_spoof): keep it */
    uint8_t ecn;     /* the IP header's ECN bits: ECT(0) from a pure_ctx, CE once marked */
    uint8_t held;    /* it reached a busy endpoint (sim_set_busy) at `arrived` and waits */
    uint64_t arrived;
    uint8_t *data;
} dgram;

typedef struct pathstate {
    sim_path cfg;
    uint64_t busy_until;
    uint32_t burst_left;
    uint64_t burst_until;
    uint32_t count;
    int bn; /* bottleneck index + 1; 0: none */
    sim_stats st;
} pathstate;

/* A datagram waiting in a bottleneck: `extra` is the path delay (with jitter and reordering)
 * that it takes once serialised. */
typedef struct qent {
    uint64_t enq, extra;
    int from, to;
    uint32_t len;
    uint8_t ecn;
    uint8_t *data;
} qent;

typedef struct bneck {
    sim_bottleneck cfg;
    struct codel cd;
    qent *q; /* a ring */
    size_t head, len, cap;
    uint64_t qbytes;
    uint64_t busy_until; /* the link serialises until then */
    bool idle_seen;      /* CoDel was told the queue was found empty */
    sim_bottleneck_stats st;
    struct qdelay_hist *hist;
} bneck;

struct sim {
    uint64_t rng;
    uint64_t now;
    uint64_t seq;
    int n;
    pure_ctx *ctx[MAX_EP];
    int dead[MAX_EP];
    const sim_agent_ops *agent[MAX_EP]; /* non-NULL: the endpoint is an agent */
    void *agent_arg[MAX_EP];
    bneck bn[MAX_BN];
    int nbn;
    pure_addr addr[MAX_EP];
    uint16_t port[MAX_EP];
    uint8_t host[MAX_EP]; /* the address's host byte (ep + 1 until sim_move) */
    int spoof[MAX_EP];    /* sim_spoof: 1 + the endpoint whose address ep's datagrams carry */
    pathstate path[MAX_EP][MAX_EP];
    uint64_t bytes[MAX_EP][MAX_EP];
    dgram *heap;
    size_t heap_len, heap_cap;
    uint8_t *buf;
    void (*tap)(void *, int, int, const uint8_t *, size_t);
    void *tap_arg;
    int icmp;              /* sim_set_icmp */
    uint64_t busy[MAX_EP]; /* sim_set_busy: how long a datagram waits to be read (0: not) */
    uint8_t busy_stamps[MAX_EP];
    uint32_t held_n[MAX_EP]; /* datagrams waiting behind a busy endpoint's backlog */
};

void sim_set_busy(sim *s, int ep, uint64_t backlog, int stamps)
{
    s->busy[ep] = backlog;
    s->busy_stamps[ep] = (uint8_t)(stamps != 0);
}

void sim_set_icmp(sim *s, int on)
{
    s->icmp = on;
}

uint64_t sim_rand(sim *s)
{
    /* splitmix64 */
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t sim_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

double sim_rand01(sim *s)
{
    return (double)(sim_rand(s) >> 11) / 9007199254740992.0;
}

static int sim_random(void *user, uint8_t *buf, size_t len)
{
    sim *s = user;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t r = sim_rand(s);
        memcpy(buf + i, &r, len - i < 8 ? len - i : 8);
    }
    return 0;
}

sim *sim_new(uint64_t seed)
{
    sim *s = calloc(1, sizeof *s);
    s->rng = seed * 0x2545F4914F6CDD1Dull + 1;
    s->buf = malloc(WRITE_BUF);
    for (int a = 0; a < MAX_EP; a++)
        for (int b = 0; b < MAX_EP; b++)
            s->path[a][b].cfg.delay = 10 * SIM_MS;
    return s;
}

void sim_free(sim *s)
{
    for (int i = 0; i < s->n; i++)
        pure_ctx_free(s->ctx[i]);
    for (size_t i = 0; i < s->heap_len; i++)
        free(s->heap[i].data);
    for (int b = 0; b < s->nbn; b++) {
        bneck *k = &s->bn[b];
        for (size_t i = 0; i < k->len; i++)
            free(k->q[(k->head + i) % k->cap].data);
        free(k->q);
        free(k->hist);
    }
    free(s->heap);
    free(s->buf);
    free(s);
}

static void make_addr(sim *s, int ep)
{
    pure_addr *a = &s->addr[ep];
    memset(a, 0, sizeof *a);
    a->len = 6;
    a->bytes[0] = 10;
    a->bytes[3] = s->host[ep] ? s->host[ep] : (uint8_t)(ep + 1);
    a->bytes[4] = (uint8_t)(s->port[ep] >> 8);
    a->bytes[5] = (uint8_t)s->port[ep];
}

/* The endpoints' wall clock: virtual time from a fixed date, so INIT timestamps repeat too. */
static uint64_t sim_realtime(void *arg)
{
    return 1800000000ull * SIM_S + ((sim *)arg)->now;
}

/* The endpoints' monotonic clock (pure_ctx_set_clock): virtual time. */
static uint64_t sim_clock(void *arg)
{
    return ((sim *)arg)->now;
}

int sim_add(sim *s, pure_settings *st)
{
    int ep = s->n++;
    sim_random(s, st->private_key, 32);
    st->random = sim_random;
    st->random_user = s;
    if (!st->realtime) {
        st->realtime = sim_realtime;
        st->realtime_user = s;
    }
    if (pure_ctx_new(st, &s->ctx[ep]) != 0) {
        fprintf(stderr, "sim: pure_ctx_new failed\n");
        abort();
    }
    pure_ctx_set_clock(s->ctx[ep], sim_clock, s); /* as pure_loop_new gives pure_now */
    s->port[ep] = (uint16_t)(1000 + ep);
    make_addr(s, ep);
    return ep;
}

int sim_add_agent(sim *s, const sim_agent_ops *ops, void *arg)
{
    if (s->n >= MAX_EP)
        return -1;
    int ep = s->n++;
    s->agent[ep] = ops;
    s->agent_arg[ep] = arg;
    s->port[ep] = (uint16_t)(1000 + ep);
    make_addr(s, ep);
    return ep;
}

pure_ctx *sim_ctx(sim *s, int ep)
{
    return s->ctx[ep];
}
pure_addr sim_addr(sim *s, int ep)
{
    return s->addr[ep];
}
uint64_t sim_now(sim *s)
{
    return s->now;
}

void sim_set_path(sim *s, int a, int b, const sim_path *p)
{
    s->path[a][b].cfg = *p;
}

void sim_kill(sim *s, int ep)
{
    s->dead[ep] = 1;
}

pure_ctx *sim_replace(sim *s, int ep, pure_settings *st)
{
    pure_ctx *old = s->ctx[ep];
    st->random = sim_random;
    st->random_user = s;
    if (pure_ctx_new(st, &s->ctx[ep]) != 0) {
        fprintf(stderr, "sim: pure_ctx_new failed\n");
        abort();
    }
    pure_ctx_set_clock(s->ctx[ep], sim_clock, s);
    s->dead[ep] = 0;
    return old;
}

void sim_rebind(sim *s, int ep)
{
    s->port[ep] = (uint16_t)(s->port[ep] + 1000);
    make_addr(s, ep);
}

void sim_move(sim *s, int ep, uint8_t host)
{
    s->host[ep] = host;
    make_addr(s, ep);
}

void sim_spoof(sim *s, int ep, int as)
{
    s->spoof[ep] = as < 0 ? 0 : as + 1;
}

const sim_stats *sim_path_stats(sim *s, int a, int b)
{
    return &s->path[a][b].st;
}
uint64_t sim_bytes(sim *s, int from, int to)
{
    return s->bytes[from][to];
}

void sim_set_tap(sim *s, void (*tap)(void *, int, int, const uint8_t *, size_t), void *arg)
{
    s->tap = tap;
    s->tap_arg = arg;
}

static int before(const dgram *a, const dgram *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_push(sim *s, dgram d)
{
    if (s->heap_len == s->heap_cap) {
        s->heap_cap = s->heap_cap ? s->heap_cap * 2 : 1024;
        s->heap = realloc(s->heap, s->heap_cap * sizeof *s->heap);
    }
    size_t i = s->heap_len++;
    s->heap[i] = d;
    while (i > 0 && before(&s->heap[i], &s->heap[(i - 1) / 2])) {
        dgram t = s->heap[i];
        s->heap[i] = s->heap[(i - 1) / 2];
        s->heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static dgram heap_pop(sim *s)
{
    dgram top = s->heap[0];
    s->heap[0] = s->heap[--s->heap_len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->heap_len && before(&s->heap[l], &s->heap[m]))
            m = l;
        if (r < s->heap_len && before(&s->heap[r], &s->heap[m]))
            m = r;
        if (m == i)
            break;
        dgram t = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = t;
        i = m;
    }
    return top;
}

/* The ECN codepoint an endpoint's datagrams leave with: a pure_ctx's are ECT(0) (2), as
 * pure_loop's sockets send them; an agent's (the reference flows) are not ECN-capable. */
static uint8_t ect_of(const sim *s, int from)
{
    return s->agent[from] ? 0 : 2;
}

static void enqueue(sim *s, int from, int to, const uint8_t *d, size_t n, uint64_t at)
{
    dgram g = {.at = at,
               .seq = s->seq++,
               .from = from,
               .to = to,
               .src = s->spoof[from] ? s->addr[s->spoof[from] - 1] : s->addr[from],
               .spoofed = s->spoof[from] != 0,
               .ecn = ect_of(s, from),
               .len = (uint32_t)n};
    g.data = malloc(n ? n : 1);
    memcpy(g.data, d, n);
    heap_push(s, g);
}

void sim_inject(sim *s, int from, int to, const uint8_t *d, size_t n, uint64_t delay)
{
    enqueue(s, from, to, d, n, s->now + delay);
}

static int in_blackhole(const sim_path *c, uint64_t now)
{
    if (c->blackhole_end > c->blackhole_start && now >= c->blackhole_start &&
        now < c->blackhole_end)
        return 1;
    return c->blackhole_period && now % c->blackhole_period < c->blackhole_len;
}

/* ---- shared bottlenecks ---- */

int sim_bottleneck_add(sim *s, const sim_bottleneck *cfg)
{
    if (s->nbn >= MAX_BN || cfg->rate == 0)
        return -1;
    bneck *k = &s->bn[s->nbn];
    memset(k, 0, sizeof *k);
    k->cfg = *cfg;
    codel_init(&k->cd, cfg->codel_target, cfg->codel_interval, 1500, cfg->ecn != 0);
    k->hist = calloc(1, sizeof *k->hist);
    return s->nbn++;
}

void sim_path_bottleneck(sim *s, int a, int b, int bn)
{
    s->path[a][b].bn = bn >= 0 && bn < s->nbn ? bn + 1 : 0;
}

void sim_bottleneck_stats_get(sim *s, int bn, sim_bottleneck_stats *out)
{
    const bneck *k = &s->bn[bn];
    *out = k->st;
    out->qdelay_median = qdelay_quantile(k->hist, 0.5);
    out->qdelay_p95 = qdelay_quantile(k->hist, 0.95);
    out->qdelay_max = k->hist->max_ns;
    out->qdelay_mean = k->hist->n ? k->hist->sum_ns / k->hist->n : 0;
}

void sim_bottleneck_stats_reset(sim *s, int bn)
{
    bneck *k = &s->bn[bn];
    memset(&k->st, 0, sizeof k->st);
    memset(k->hist, 0, sizeof *k->hist);
}

/* Serves the bottleneck up to now: each time the link is free and a datagram waits, the head
 * leaves the queue (CoDel may drop it there) and starts serialising. */
static void bneck_serve(sim *s, bneck *k)
{
    for (;;) {
        if (k->len == 0) {
            /* the link's next dequeue finds the queue empty (RFC 8289's dequeue of NULL) */
            if (!k->idle_seen && k->busy_until <= s->now) {
                codel_empty(&k->cd);
                k->idle_seen = true;
            }
            return;
        }
        qent *h = &k->q[k->head];
        uint64_t t = k->busy_until > h->enq ? k->busy_until : h->enq;
        if (t > s->now)
            return;
        qent e = *h;
        k->head = (k->head + 1) % k->cap;
        k->len--;
        k->qbytes -= e.len;
        k->idle_seen = false;
        uint64_t sojourn = t - e.enq;
        int verdict = k->cfg.codel
                          ? codel_judge(&k->cd, t, sojourn, k->qbytes, k->cfg.ecn && e.ecn != 0)
                          : CODEL_PASS;
        if (verdict == CODEL_DROP) {
            k->st.dropped_codel++;
            s->path[e.from][e.to].st.lost++;
            free(e.data);
            continue;
        }
        if (verdict == CODEL_MARK) {
            e.ecn = 3; /* CE */
            k->st.marked_codel++;
        }
        qdelay_add(k->hist, sojourn);
        k->st.forwarded++;
        k->st.bytes_forwarded += e.len;
        k->busy_until = t + (uint64_t)e.len * 8 * SIM_S / k->cfg.rate;
        dgram g = {.at = k->busy_until + e.extra,
                   .seq = s->seq++,
                   .from = e.from,
                   .to = e.to,
                   .src = s->addr[e.from],
                   .len = e.len,
                   .ecn = e.ecn,
                   .data = e.data};
        heap_push(s, g);
    }
}

static uint64_t bneck_next(const bneck *k)
{
    if (k->len == 0)
        return UINT64_MAX;
    uint64_t enq = k->q[k->head].enq;
    return k->busy_until > enq ? k->busy_until : enq;
}

static void bneck_push(sim *s, bneck *k, int from, int to, const uint8_t *d, size_t n,
                       uint64_t extra)
{
    bneck_serve(s, k);
    k->st.enqueued++;
    if ((k->cfg.limit_packets && k->len >= k->cfg.limit_packets) ||
        (k->cfg.limit_bytes && k->qbytes + n > k->cfg.limit_bytes)) {
        k->st.dropped_queue++;
        s->path[from][to].st.lost++;
        return;
    }
    if (k->len == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 256;
        qent *q = malloc(cap * sizeof *q);
        for (size_t i = 0; i < k->len; i++)
            q[i] = k->q[(k->head + i) % k->cap];
        free(k->q);
        k->q = q;
        k->cap = cap;
        k->head = 0;
    }
    qent *e = &k->q[(k->head + k->len) % k->cap];
    *e = (qent){.enq = s->now,
                .extra = extra,
                .from = from,
                .to = to,
                .len = (uint32_t)n,
                .ecn = ect_of(s, from)};
    e->data = malloc(n ? n : 1);
    memcpy(e->data, d, n);
    k->len++;
    k->qbytes += n;
    if (k->len > k->st.max_packets)
        k->st.max_packets = k->len;
    if (k->qbytes > k->st.max_bytes)
        k->st.max_bytes = k->qbytes;
    bneck_serve(s, k); /* an idle link takes it at once */
}

/* The rest of transmit() for a path through a bottleneck: the path's corruption and duplication
 * now, its delay after serialisation. */
static void via_bottleneck(sim *s, bneck *k, int from, int to, const uint8_t *d, size_t n,
                           const sim_path *c)
{
    pathstate *ps = &s->path[from][to];
    uint8_t tmp[65536];
    memcpy(tmp, d, n);
    if (c->corrupt > 0 && n > 0 && sim_rand01(s) < c->corrupt) {
        tmp[sim_rand(s) % n] ^= (uint8_t)(1 + sim_rand(s) % 255);
        ps->st.corrupted++;
    }
    int copies = 1;
    if (c->duplicate > 0 && sim_rand01(s) < c->duplicate) {
        ps->st.duplicated++;
        copies = 2;
    }
    for (int i = 0; i < copies; i++) {
        uint64_t extra = c->delay;
        if (c->jitter)
            extra += sim_rand(s) % c->jitter;
        if (c->reorder > 0 && sim_rand01(s) < c->reorder)
            extra += c->reorder_delay;
        bneck_push(s, k, from, to, tmp, n, extra);
    }
}

/* One datagram enters the path from->to: decide its fate. */
static void transmit(sim *s, int from, int to, const uint8_t *d, size_t n)
{
    pathstate *ps = &s->path[from][to];
    const sim_path *c = &ps->cfg;
    if (s->dead[from] || s->dead[to])
        return;
    ps->st.sent++;
    ps->st.bytes_sent += n;
    s->bytes[from][to] += n;
    if (s->tap)
        s->tap(s->tap_arg, from, to, d, n);
    int handshake = n > 0 && d[0] >= 1 && d[0] <= 4;
    if (c->router_mtu && n > c->router_mtu) { /* a router whose next link is smaller */
        ps->st.lost++;
        ps->st.too_big++;
        if (c->router_ptb) /* its Packet Too Big, quoting as much as ICMPv6 may (1232 bytes) */
            pure_ctx_packet_too_big(s->ctx[from], &s->addr[to], c->router_mtu, d,
                                    n < 1232 ? n : 1232, s->now);
        return;
    }
    ps->count++;
    if (ps->count <= c->lose_first || in_blackhole(c, s->now) ||
        (handshake && sim_rand01(s) < c->handshake_loss)) {
        ps->st.lost++;
        return;
    }
    if (ps->burst_left && s->now < ps->burst_until) {
        ps->burst_left--;
        ps->st.lost++;
        return;
    }
    if (c->burst_start > 0 && sim_rand01(s) < c->burst_start) {
        ps->burst_left = c->burst_len ? c->burst_len - 1 : 0;
        ps->burst_until = s->now + 50 * SIM_MS;
        ps->st.lost++;
        return;
    }
    if (c->loss > 0 && sim_rand01(s) < c->loss) {
        ps->st.lost++;
        return;
    }
    if (ps->bn) {
        via_bottleneck(s, &s->bn[ps->bn - 1], from, to, d, n, c);
        return;
    }
    uint64_t depart = s->now;
    if (c->bandwidth) {
        if (ps->busy_until < s->now)
            ps->busy_until = s->now;
        uint64_t backlog_ns = ps->busy_until - s->now;
        if (c->queue && backlog_ns * c->bandwidth / 8 / SIM_S > c->queue) {
            ps->st.lost++; /* tail drop */
            return;
        }
        ps->busy_until += (uint64_t)n * 8 * SIM_S / c->bandwidth;
        depart = ps->busy_until;
    }
    uint64_t at = depart + c->delay;
    if (c->jitter)
        at += sim_rand(s) % c->jitter;
    if (c->reorder > 0 && sim_rand01(s) < c->reorder)
        at += c->reorder_delay;
    uint8_t tmp[65536];
    memcpy(tmp, d, n);
    if ((c->corrupt > 0 && sim_rand01(s) < c->corrupt) ||
        (handshake && c->handshake_corrupt > 0 && sim_rand01(s) < c->handshake_corrupt)) {
        tmp[sim_rand(s) % n] ^= (uint8_t)(1 + sim_rand(s) % 255);
        ps->st.corrupted++;
    }
    enqueue(s, from, to, tmp, n, at);
    if (c->duplicate > 0 && sim_rand01(s) < c->duplicate) {
        ps->st.duplicated++;
        enqueue(s, from, to, tmp, n, at + (c->jitter ? sim_rand(s) % c->jitter : 1000));
    }
}

static int find_ep(sim *s, const pure_addr *a)
{
    for (int i = 0; i < s->n; i++)
        if (a->len == s->addr[i].len && memcmp(a->bytes, s->addr[i].bytes, a->len) == 0)
            return i;
    /* an old address of an endpoint that rebound: same host byte */
    for (int i = 0; i < s->n; i++)
        if (a->len == 6 && a->bytes[3] == s->addr[i].bytes[3])
            return i;
    return -1;
}

void sim_send(sim *s, int from, int to, const uint8_t *d, size_t n)
{
    transmit(s, from, to, d, n);
}

static void flush(sim *s, int ep)
{
    if (s->dead[ep] || s->agent[ep])
        return;
    size_t seg;
    pure_addr to;
    int64_t n;
    while ((n = pure_ctx_write(s->ctx[ep], s->buf, WRITE_BUF, &seg, &to, s->now)) > 0) {
        int dst = find_ep(s, &to);
        if (dst >= 0 && s->path[ep][dst].cfg.mtu && seg > s->path[ep][dst].cfg.mtu) {
            pure_ctx_burst_too_big(s->ctx[ep], s->now); /* as the I/O loop does on EMSGSIZE */
            continue;
        }
        for (int64_t off = 0; off < n; off += (int64_t)seg) {
            size_t len = (size_t)(n - off) < seg ? (size_t)(n - off) : seg;
            if (dst >= 0 && !s->dead[dst])
                transmit(s, ep, dst, s->buf + off, len);
            else if (s->icmp) /* the host is there, the port closed: as IP_RECVERR reports it */
                pure_ctx_unreachable(s->ctx[ep], &to, PURE_UNREACH_PORT, s->buf + off, len, s->now);
        }
    }
}

static uint64_t ep_deadline(sim *s, int i)
{
    if (s->dead[i])
        return UINT64_MAX;
    if (s->agent[i])
        return s->agent[i]->deadline(s->agent_arg[i]);
    return pure_ctx_deadline(s->ctx[i]);
}

int sim_run(sim *s, int (*done)(void *), void *arg, uint64_t until)
{
    for (int i = 0; i < s->n; i++)
        flush(s, i);
    for (;;) {
        if (done && done(arg))
            return 1;
        uint64_t next = UINT64_MAX;
        if (s->heap_len)
            next = s->heap[0].at;
        for (int i = 0; i < s->n; i++) {
            uint64_t d = ep_deadline(s, i);
            if (d < next)
                next = d;
        }
        for (int b = 0; b < s->nbn; b++) {
            uint64_t d = bneck_next(&s->bn[b]);
            if (d < next)
                next = d;
        }
        if (next == UINT64_MAX || next > until) {
            s->now = until;
            return done ? done(arg) : 0;
        }
        if (next > s->now)
            s->now = next;
        /* move bottleneck queues on, deliver everything due now, then run timers, then let every
         * endpoint write */
        for (int b = 0; b < s->nbn; b++)
            bneck_serve(s, &s->bn[b]);
        while (s->heap_len && s->heap[0].at <= s->now) {
            dgram g = heap_pop(s);
            if (s->busy[g.to] && !g.held) { /* waits behind the busy loop's backlog */
                g.held = 1;
                g.arrived = g.at;
                g.at += s->busy[g.to];
                s->held_n[g.to]++;
                heap_push(s, g);
                continue;
            }
            /* the receiver sees the sender's current address (rebinding shows up here) */
            if (g.held)
                s->held_n[g.to]--;
            pure_addr src = g.spoofed ? g.src : s->addr[g.from];
            uint64_t arrived = g.held && s->busy_stamps[g.to] ? g.arrived : s->now;
            if (s->dead[g.to])
                ;
            else if (s->agent[g.to])
                s->agent[g.to]->read(s->agent_arg[g.to], g.from, g.data, g.len, s->now);
            else
                pure_ctx_read_at(s->ctx[g.to], &src, g.data, g.len, g.ecn, arrived, s->now);
            s->path[g.from][g.to].st.delivered++;
            free(g.data);
        }
        for (int i = 0; i < s->n; i++) {
            if (ep_deadline(s, i) > s->now)
                continue;
            if (s->agent[i]) {
                s->agent[i]->timeout(s->agent_arg[i], s->now);
                continue;
            }
            /* a busy endpoint's loop says when its socket holds datagrams it has not read, as
             * pure_loop does after its reads */
            if (s->busy[i] || s->held_n[i])
                pure_ctx_read_backlog(s->ctx[i], s->held_n[i] > 0);
            pure_ctx_timeout(s->ctx[i], s->now);
        }
        for (int i = 0; i < s->n; i++)
            flush(s, i);
    }
}
