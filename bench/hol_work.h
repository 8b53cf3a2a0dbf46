/* SPDX-License-Identifier: MIT */
/* hol_work.h: the head-of-line benchmark's wire format and measurement (bench/run.py hol, issue
 * #23), shared by the C peers' `hol` modes (peers/ngtcp2/hol.c, peers/tls/hol.c) so they count
 * alike; peers/quinn/src/hol.rs mirrors it. Pure's own row is tools/hol_bench.c, whose contract
 * (requests, timing, percentiles, output keys) this follows.
 *
 * A stream carries frames: u32 big-endian length + body.
 *   - request: a body of --size bytes (8..64): the CLOCK_MONOTONIC time in ns it was due (u64 BE),
 *     then 0xab bytes. The server sends the frame back unchanged on the stream it came on.
 *   - bulk: a body longer than HOL_SMALL_MAX. The server only counts its bytes as they arrive.
 *   - query: a 24-byte body, u64 all ones, then two CLOCK_MONOTONIC instants (u64 BE) A and B.
 *     The server answers on the same stream with a 24-byte body: all ones, the bulk body bytes it
 *     read between A and B, and all it read on the connection. The client sends it once, after
 *     its measured window [A, B), to learn the bulk's goodput as the server saw it (both
 *     processes read the same clock; the server logs its count at most once a millisecond).
 * Header only: every function is static inline. */
#ifndef HOL_WORK_H
#define HOL_WORK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOL_SMALL_MAX 64
#define HOL_MAX_FRAME (16u << 20)
#define HOL_QUERY_LEN 24
#define HOL_QUERY_MAGIC UINT64_MAX
#define HOL_DRAIN_NS 10000000000ull /* answers missing after the window: waited for this long */

static inline uint64_t hol_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void hol_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static inline void hol_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint32_t hol_get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t hol_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* ---- framing ---- */

typedef void (*hol_small_fn)(void *arg, const uint8_t *body, size_t len);

typedef struct hol_framer {
    uint8_t hdr[4];
    size_t hdr_have;
    uint64_t body_left;
    int in_small;
    uint8_t small[HOL_SMALL_MAX];
    size_t small_len;
} hol_framer;

/* Feeds stream bytes: each small body goes whole to fn, bulk body bytes are added to *bulk.
 * -1 for a frame longer than HOL_MAX_FRAME (the stream is then unusable). */
static inline int hol_feed(hol_framer *f, const uint8_t *p, size_t n, hol_small_fn fn, void *arg,
                           uint64_t *bulk)
{
    while (n) {
        if (f->body_left) {
            size_t t = f->body_left < n ? (size_t)f->body_left : n;
            if (f->in_small) {
                memcpy(f->small + f->small_len, p, t);
                f->small_len += t;
            } else {
                *bulk += t;
            }
            f->body_left -= t, p += t, n -= t;
            if (!f->body_left && f->in_small)
                fn(arg, f->small, f->small_len);
            continue;
        }
        size_t t = 4 - f->hdr_have < n ? 4 - f->hdr_have : n;
        memcpy(f->hdr + f->hdr_have, p, t);
        f->hdr_have += t, p += t, n -= t;
        if (f->hdr_have < 4)
            break;
        f->hdr_have = 0;
        uint32_t len = hol_get32(f->hdr);
        if (len > HOL_MAX_FRAME)
            return -1;
        f->in_small = len <= HOL_SMALL_MAX;
        f->small_len = 0;
        f->body_left = len;
        if (!len)
            fn(arg, f->small, 0);
    }
    return 0;
}

/* ---- the server's count of bulk bytes, logged at most once a millisecond ---- */

typedef struct hol_bulklog {
    uint64_t total;
    uint64_t *t, *v;
    size_t n, cap;
} hol_bulklog;

static inline void hol_bulklog_add(hol_bulklog *l, uint64_t bytes, uint64_t now)
{
    l->total += bytes;
    if (l->n && now < l->t[l->n - 1] + 1000000) {
        l->v[l->n - 1] = l->total;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4096;
        uint64_t *t = realloc(l->t, cap * sizeof *t);
        if (t)
            l->t = t;
        uint64_t *v = t ? realloc(l->v, cap * sizeof *v) : NULL;
        if (!v) { /* out of memory: fold into the last entry (coarser, still a count) */
            if (l->n)
                l->v[l->n - 1] = l->total;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->t[l->n] = now;
    l->v[l->n++] = l->total;
}

/* The count at time t: that of the last entry at or before t (0 before the first). */
static inline uint64_t hol_bulklog_at(const hol_bulklog *l, uint64_t t)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l->t[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? l->v[lo - 1] : 0;
}

static inline void hol_bulklog_free(hol_bulklog *l)
{
    free(l->t);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* A query (a < b: the window) or an answer, framed, into out (4 + HOL_QUERY_LEN bytes). */
static inline void hol_query_frame(uint8_t *out, uint64_t a, uint64_t b)
{
    hol_put32(out, HOL_QUERY_LEN);
    hol_put64(out + 4, HOL_QUERY_MAGIC);
    hol_put64(out + 12, a);
    hol_put64(out + 20, b);
}

/* The server's reply to a small body, framed, into out (at most 4 + HOL_SMALL_MAX bytes): the
 * echo, or a query's answer. Returns its length. */
static inline size_t hol_server_reply(const hol_bulklog *l, const uint8_t *body, size_t len,
                                      uint8_t *out)
{
    if (len == HOL_QUERY_LEN && hol_get64(body) == HOL_QUERY_MAGIC) {
        uint64_t a = hol_bulklog_at(l, hol_get64(body + 8)),
                 b = hol_bulklog_at(l, hol_get64(body + 16));
        hol_query_frame(out, b > a ? b - a : 0, l->total);
        return 4 + HOL_QUERY_LEN;
    }
    hol_put32(out, (uint32_t)len);
    memcpy(out + 4, body, len);
    return 4 + len;
}

/* ---- the client ---- */

enum {
    HOL_ALONE,
    HOL_SAME,
    HOL_SEPARATE
};
static const char *const hol_mode_names[] = {"alone", "same", "separate"};

typedef struct hol_opts {
    int mode; /* -1 until given */
    double duration, warmup;
    long rate, size, bulk;
} hol_opts;

static inline void hol_opts_default(hol_opts *o)
{
    o->mode = -1;
    o->duration = 10, o->warmup = 1;
    o->rate = 1000, o->size = 61, o->bulk = 1 << 20;
}

static inline int hol_num(const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || !(x >= lo && x <= hi))
        return -1;
    *out = x;
    return 0;
}

/* One option with its value: 1 if taken, 0 if not one of these, -1 for a bad value. */
static inline int hol_opt(hol_opts *o, const char *a, const char *v)
{
    double x;
    if (!strcmp(a, "--mode")) {
        for (int m = 0; m < 3; m++)
            if (v && !strcmp(v, hol_mode_names[m]))
                return o->mode = m, 1;
        return -1;
    }
    if (!strcmp(a, "--duration"))
        return hol_num(v, 0.001, 3600, &o->duration) ? -1 : 1;
    if (!strcmp(a, "--warmup"))
        return hol_num(v, 0, 3600, &o->warmup) ? -1 : 1;
    if (!strcmp(a, "--rate"))
        return hol_num(v, 1, 100000, &x) ? -1 : (o->rate = (long)x, 1);
    if (!strcmp(a, "--size"))
        return hol_num(v, 8, HOL_SMALL_MAX, &x) ? -1 : (o->size = (long)x, 1);
    if (!strcmp(a, "--bulk"))
        return hol_num(v, HOL_SMALL_MAX + 1, HOL_MAX_FRAME, &x) ? -1 : (o->bulk = (long)x, 1);
    return 0;
}

#define HOL_CLIENT_OPTS                                                                            \
    "--mode alone|same|separate [--duration S] [--warmup S] [--rate N] [--size 8..64] "            \
    "[--bulk 65..16777216]"

typedef struct hol_client {
    uint64_t t0, from, to, interval;
    uint32_t size;
    uint64_t next_seq;       /* request k is due at t0 + k * interval; none due at or after `to` */
    uint64_t sent_in_window; /* requests due in [from, to) handed to the transport */
    uint64_t *rtt;
    size_t n_rtt, cap_rtt;
    int answered_query;
    uint64_t query_bytes, query_total;
    uint8_t *bulk_frame; /* 4 + bulk bytes: length prefix, then byte i = i % 251 */
    size_t bulk_len;
} hol_client;

/* Sets the clock running (call once the connection is up). 0, or -1 out of memory. */
static inline int hol_client_start(hol_client *c, const hol_opts *o)
{
    memset(c, 0, sizeof *c);
    c->t0 = hol_now_ns();
    c->from = c->t0 + (uint64_t)(o->warmup * 1e9);
    c->to = c->from + (uint64_t)(o->duration * 1e9);
    c->interval = 1000000000ull / (uint64_t)o->rate;
    c->size = (uint32_t)o->size;
    c->bulk_len = 4 + (size_t)o->bulk;
    c->bulk_frame = malloc(c->bulk_len);
    c->cap_rtt = (size_t)((double)o->rate * o->duration) + 16;
    c->rtt = malloc(c->cap_rtt * sizeof *c->rtt);
    if (!c->bulk_frame || !c->rtt)
        return -1;
    hol_put32(c->bulk_frame, (uint32_t)o->bulk);
    for (long i = 0; i < o->bulk; i++)
        c->bulk_frame[4 + i] = (uint8_t)(i % 251);
    return 0;
}

static inline uint64_t hol_next_due(const hol_client *c)
{
    return c->t0 + c->next_seq * c->interval;
}
static inline int hol_requests_done(const hol_client *c)
{
    return hol_next_due(c) >= c->to;
}

/* Writes the requests due by `now` (framed) into buf, at most cap bytes. Returns the bytes. */
static inline size_t hol_take_due(hol_client *c, uint64_t now, uint8_t *buf, size_t cap)
{
    size_t n = 0;
    for (uint64_t due; (due = hol_next_due(c)) <= now && due < c->to && n + 4 + c->size <= cap;) {
        hol_put32(buf + n, c->size);
        hol_put64(buf + n + 4, due);
        memset(buf + n + 12, 0xab, c->size - 8);
        n += 4 + c->size;
        c->next_seq++;
        if (due >= c->from)
            c->sent_in_window++;
    }
    return n;
}

/* A small body that came back (hol_small_fn; arg is the hol_client). */
static inline void hol_client_small(void *arg, const uint8_t *d, size_t len)
{
    hol_client *c = arg;
    if (len < 8)
        return;
    uint64_t due = hol_get64(d);
    if (due == HOL_QUERY_MAGIC && len == HOL_QUERY_LEN) {
        c->answered_query = 1;
        c->query_bytes = hol_get64(d + 8);
        c->query_total = hol_get64(d + 16);
        return;
    }
    if (due < c->from || due >= c->to || c->n_rtt == c->cap_rtt)
        return;
    uint64_t now = hol_now_ns();
    c->rtt[c->n_rtt++] = now > due ? now - due : 0;
}

/* Every request of the window issued and answered. */
static inline int hol_all_answered(const hol_client *c)
{
    return hol_requests_done(c) && c->n_rtt >= c->sent_in_window;
}

static inline int hol_cmp64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Element floor(q * n) of the sorted round trips, in µs, as tools/hol_bench.c takes it. */
static inline double hol_pct_us(const uint64_t *v, size_t n, double q)
{
    if (!n)
        return -1;
    size_t i = (size_t)(q * (double)n);
    if (i >= n)
        i = n - 1;
    return (double)v[i] / 1e3;
}

/* Prints the result line (extra: more ", \"key\": value" pairs, or ""). */
static inline void hol_print(hol_client *c, int mode, uint64_t t_from, uint64_t t_to,
                             const char *extra)
{
    qsort(c->rtt, c->n_rtt, sizeof *c->rtt, hol_cmp64);
    double secs = (double)(t_to - t_from) / 1e9;
    printf("{\"mode\": \"%s\", \"requests\": %" PRIu64 ", \"answered\": %zu, \"p50_us\": %.1f, "
           "\"p99_us\": %.1f, \"p999_us\": %.1f, \"max_us\": %.1f, \"bulk_mbps\": %.2f, "
           "\"seconds\": %.3f, \"bulk_bytes\": %" PRIu64 ", \"goodput_answered\": %s%s}\n",
           hol_mode_names[mode], c->sent_in_window, c->n_rtt, hol_pct_us(c->rtt, c->n_rtt, 0.5),
           hol_pct_us(c->rtt, c->n_rtt, 0.99), hol_pct_us(c->rtt, c->n_rtt, 0.999),
           c->n_rtt ? (double)c->rtt[c->n_rtt - 1] / 1e3 : -1,
           secs > 0 ? (double)c->query_bytes * 8 / 1e6 / secs : 0.0, secs, c->query_bytes,
           c->answered_query ? "true" : "false", extra);
    fflush(stdout);
    if (!c->n_rtt)
        fprintf(stderr,
                "hol: none of the window's %" PRIu64
                " requests was answered within %llu s of its end\n",
                c->sent_in_window, (unsigned long long)(HOL_DRAIN_NS / 1000000000ull));
}

static inline void hol_client_free(hol_client *c)
{
    free(c->rtt);
    free(c->bulk_frame);
}

#endif
